"""Real TensorFlow models for the interop tests: tf-keras applications with
random weights and random, non-trivial batch-norm statistics, frozen to
GraphDefs, and graft runs over them."""
import collections
import subprocess

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import convert_to_constants

from conftest import graft_binary, repo_path

FOLD_RULES = repo_path("rules", "tf", "fold_batch_norms.graft")


def random_stats(rng, shape):
    """gamma, beta, moving mean, moving variance."""
    return [rng.uniform(0.5, 1.5, shape), rng.uniform(-0.5, 0.5, shape),
            rng.uniform(-0.5, 0.5, shape), rng.uniform(0.5, 2.0, shape)]


def randomize_batch_norms(rng, model, bn_class):
    """Random statistics for every batch norm; layers without a scale or a
    centre (InceptionV3's `scale=False`) get only what they hold."""
    for layer in model.layers:
        if isinstance(layer, bn_class):
            shape = layer.get_weights()[-1].shape
            gamma, beta, mean, var = random_stats(rng, shape)
            weights = ([gamma] if layer.scale else []) + ([beta] if layer.center else [])
            layer.set_weights([w.astype(np.float32) for w in weights + [mean, var]])


def freeze(model, shape):
    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec(shape, tf.float32, name="input"))
    return convert_to_constants.convert_variables_to_constants_v2(fn).graph.as_graph_def()


LINEAR_OPS = ("Conv2D", "Conv3D", "DepthwiseConv2dNative", "MatMul", "BiasAdd")


def batch_norms_left(nodes):
    """Every form of a batch norm still in a list of NodeDefs (a graph's, or
    a function body's): the fused ops, and the arithmetic of an unfused one
    as Keras 3 writes it: an Rsqrt, or a Mul, Add or Sub of a constant after
    a conv, matmul or BiasAdd (through Squeeze / Reshape views) that
    nothing else reads (Keras 3's swish scales a BiasAdd it also reads)."""
    by_name = {n.name: n for n in nodes}

    def producer(tensor):
        return by_name.get(tensor.lstrip("^").split(":")[0])

    def through(tensor, ops):
        n = producer(tensor)
        while n is not None and n.op in ops and n.input:
            n = producer(n.input[0])
        return n

    def constant(tensor):
        n = through(tensor, ("Identity",))
        return n is not None and n.op == "Const"

    def linear(tensor):
        n = through(tensor, ("Squeeze", "Reshape"))
        return n is not None and n.op in LINEAR_OPS

    readers = collections.Counter(i.lstrip("^").split(":")[0] for n in nodes for i in n.input)

    def only_reader(tensor):  # a batch norm is the linear op's one reader
        return readers.get(tensor.split(":")[0], 0) == 1

    left = []
    for n in nodes:
        data = [i for i in n.input if not i.startswith("^")]
        if "BatchNorm" in n.op or n.op == "Rsqrt":
            left.append(n.name)
        elif (n.op in ("Mul", "Add", "AddV2", "Sub") and len(data) == 2
              and any(constant(i) for i in data)
              and any(linear(i) and only_reader(i) for i in data)):
            left.append(n.name)
    return left


def graft_apply(graph_def, tmp_path, name, *args):
    """Runs `graft apply ARGS` on a GraphDef; returns (result, stderr)."""
    src = tmp_path / (name + ".pb")
    out = tmp_path / (name + ".out.pb")
    src.write_bytes(graph_def.SerializeToString())
    proc = subprocess.run([graft_binary(), "apply", *map(str, args), str(src), "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    result = tf.compat.v1.GraphDef()
    result.ParseFromString(out.read_bytes())
    return result, proc.stderr


def last_identity(graph_def):
    """The fetch name of a frozen Keras model's output."""
    return [n.name for n in graph_def.node if n.op == "Identity"][-1] + ":0"
