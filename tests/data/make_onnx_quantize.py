"""Writes the inputs of rules/onnx/quantize_qdq.graft's test blocks:

tests/data/onnx/qdq_cnn.onnxtxt       opset 13: Conv -> Relu -> MaxPool ->
                                      Flatten -> Gemm (transB)
tests/data/onnx/qdq_cnn_ranges.yaml   calibrated ranges of four of its five
                                      activations (not MaxPool's output)
tests/data/onnx/zoo_qdq_shuffle_ranges.yaml, zoo_conv_bn_ranges.yaml,
    zoo_bias_gelu_op_ranges.yaml
                                      the ranges graft.calibrate measures on
                                      those cuts of real exports
                                      (make_zoo_cuts.py) over 8 inputs drawn
                                      from N(0, 1) (needs
                                      scripts/build_wheel.sh's package)

  .venv/bin/python tests/data/make_onnx_quantize.py
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# cuts of real exports whose ranges graft.calibrate measures
CALIBRATED_CUTS = ["zoo_qdq_shuffle", "zoo_conv_bn", "zoo_bias_gelu_op"]


def calibrate_cut(name):
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import graft.calibrate as calibrate
    with open(os.path.join(HERE, name + ".onnxtxt")) as f:
        model = text_format.Parse(f.read(), onnx.ModelProto())
    rng = np.random.default_rng(3)
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim]
              for i in model.graph.input}
    batches = [{n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
               for _ in range(8)]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".onnx")
        onnx.save(model, path)
        ranges = calibrate.onnx_ranges(path, batches, os.path.join(tmp, "ranges.yaml"))
        with open(os.path.join(tmp, "ranges.yaml")) as f:
            table = f.read().split("\n", 1)[1]  # its header names the temporary file
    with open(os.path.join(HERE, name + "_ranges.yaml"), "w") as out:
        out.write(f"# value: [min, max], graft.calibrate's minmax over 8 batches of {name}.onnxtxt\n"
                  + table)
    print(name, len(ranges), "ranges")


def main():
    rng = np.random.default_rng(11)
    f = lambda n, sh: numpy_helper.from_array(rng.normal(0, 0.5, sh).astype(np.float32), n)  # noqa
    node = helper.make_node
    nodes = [node("Conv", ["x", "w1", "b1"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
             node("Relu", ["conv"], ["relu"], name="relu"),
             node("MaxPool", ["relu"], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             node("Flatten", ["pool"], ["flat"], name="flatten"),
             node("Gemm", ["flat", "w2", "b2"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(
        nodes, "qdq_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [f("w1", (4, 3, 3, 3)), f("b1", (4,)), f("w2", (10, 64)), f("b2", (10,))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="graft tests")
    model.ir_version = 7
    onnx.checker.check_model(model, full_check=True)
    with open(os.path.join(HERE, "qdq_cnn.onnxtxt"), "w") as out:
        out.write(text_format.MessageToString(model))
    with open(os.path.join(HERE, "qdq_cnn_ranges.yaml"), "w") as out:
        out.write('# value: [min, max]\n"x": [-3.0, 3.0]\n"conv": [-4.5, 5.25]\n'
                  '"relu": [0.0, 5.25]\n"flat": [0.0, 5.0]\n')
    for name in CALIBRATED_CUTS:
        calibrate_cut(name)


if __name__ == "__main__":
    main()
