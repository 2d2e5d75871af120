"""ONNX models for the interop tests, made offline: the real architectures
the onnx wheel ships under onnx/backend/test/data/light/ (their weights are
ConstantOfShape nodes of one value) given random initializers, He-scaled
weights and random batch-norm statistics so that a wrong fold shows, and
their final Softmax dropped so that outputs compare as logits, not
saturated probabilities."""
import os

import numpy as np
import onnx
from onnx import numpy_helper

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MODELS = ["resnet50", "densenet121", "inception_v1", "inception_v2", "shufflenet",
          "squeezenet", "vgg19", "bvlc_alexnet", "zfnet512"]
# (low, high) of BatchNormalization's scale, B, mean and var.
BN_RANGES = [(0.5, 1.5), (-0.5, 0.5), (-0.5, 0.5), (0.5, 2.0)]


def _value(rng, shape, consumers):
    if consumers and consumers[0][0].op_type == "BatchNormalization":
        lo, hi = BN_RANGES[consumers[0][1] - 1]
        return rng.uniform(lo, hi, shape)
    if len(shape) >= 2:
        gemm = consumers and consumers[0][0].op_type == "Gemm"
        fan_in = int(shape[1]) if gemm else int(np.prod(shape[1:]))
        return rng.standard_normal(shape) * np.sqrt(2.0 / max(fan_in, 1))
    return rng.uniform(-0.1, 0.1, shape)


def make(name, out_dir, seed=0):
    """Writes OUT_DIR/NAME.onnx; returns its path."""
    model = onnx.load(os.path.join(LIGHT, "light_%s.onnx" % name))
    graph = model.graph
    rng = np.random.default_rng(seed)
    shapes = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    kept, made = [], []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in shapes:
            shape = shapes[node.input[0]].astype(int)
            consumers = [(c, list(c.input).index(node.output[0]))
                         for c in graph.node if node.output[0] in c.input]
            value = _value(rng, shape, consumers).astype(np.float32)
            made.append(numpy_helper.from_array(value, node.output[0]))
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    if graph.node[-1].op_type == "Softmax" and graph.node[-1].output[0] == graph.output[0].name:
        graph.output[0].name = graph.node[-1].input[0]
        del graph.node[-1]
    used = {i for n in graph.node for i in n.input}
    initializers = [t for t in graph.initializer if t.name in used] + made
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    names = {t.name for t in initializers}
    inputs = [i for i in graph.input if i.name in used and i.name not in names]
    del graph.input[:]
    graph.input.extend(inputs)
    model.ir_version = max(model.ir_version, 4)  # initializers need not be inputs
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(out_dir, name + ".onnx")
    onnx.save(model, path)
    return path


def example_input(path, seed=0):
    model = onnx.load(path, load_external_data=False)
    (inp,) = model.graph.input
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    return inp.name, np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def assert_shapes_agree(graft, path):
    """`graft mem` knows every tensor's shape in the model at `path`, each
    equal to onnx.shape_inference's where that knows it (all but two
    nodes' outputs compared)."""
    import json
    model = onnx.load(path)
    inferred = onnx.shape_inference.infer_shapes(model)
    theirs = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(inferred.graph.value_info) + list(inferred.graph.output)
              if all(d.HasField("dim_value") for d in v.type.tensor_type.shape.dim)}
    report = json.loads(graft("mem", "--json", path).stdout)
    assert report["unknown_shapes"] == 0
    tensors = report["tensors"]
    compared = 0
    for node in model.graph.node:
        for k, value in enumerate(node.output):
            tensor = node.name if k == 0 else "%s:%d" % (node.name, k)
            if value in theirs and tensor in tensors:
                assert tensors[tensor]["shape"] == str(theirs[value]), (path, value)
                compared += 1
    assert compared >= len(model.graph.node) - 2, (path, compared)
