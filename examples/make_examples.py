"""Regenerates the example graphs that graft's demo, docs and tests use.

  .venv/bin/python examples/make_examples.py

Writes, with fixed seeds (the bytes depend on the TensorFlow version):
  examples/keras_cnn.pb            frozen inference graph of a small Keras
                                   (tf-keras) image classifier with batch
                                   norms; random weights and BN statistics.
                                   Input `input`, output `Identity`.
  tests/data/control_devices.pb    a TF1-style graph with control edges,
  tests/data/control_devices.pbtxt device placements and multi-output ops
                                   (Split, Unique, FusedBatchNormV3).
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402
from tensorflow.python.framework import convert_to_constants  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def randomize_batch_norms(model, rng):
    """Non-trivial BN statistics, so folding them is a real test."""
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights([
                rng.uniform(0.5, 1.5, gamma.shape).astype(np.float32),
                rng.uniform(-0.5, 0.5, beta.shape).astype(np.float32),
                rng.uniform(-0.5, 0.5, mean.shape).astype(np.float32),
                rng.uniform(0.5, 2.0, var.shape).astype(np.float32),
            ])


def keras_cnn():
    tf.random.set_seed(1)
    rng = np.random.default_rng(1)
    L = keras.layers
    inputs = keras.Input((32, 32, 3), name="input")
    x = L.Conv2D(16, 3, padding="same", use_bias=False)(inputs)
    x = L.BatchNormalization()(x)
    x = L.ReLU(6.0)(x)
    x = L.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
    x = L.BatchNormalization()(x)
    x = L.ReLU(6.0)(x)
    x = L.Conv2D(32, 1, strides=2, use_bias=True)(x)
    x = L.BatchNormalization()(x)
    x = L.ReLU()(x)
    shortcut = x
    x = L.Conv2D(32, 3, padding="same", use_bias=False)(x)
    x = L.BatchNormalization()(x)
    x = L.Add()([x, shortcut])
    x = L.ReLU()(x)
    x = L.GlobalAveragePooling2D()(x)
    x = L.Dense(10)(x)
    outputs = L.Softmax()(x)
    model = keras.Model(inputs, outputs, name="keras_cnn")
    randomize_batch_norms(model, rng)

    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec([None, 32, 32, 3], tf.float32, name="input"))
    frozen = convert_to_constants.convert_variables_to_constants_v2(fn)
    return frozen.graph.as_graph_def()


def control_devices():
    graph = tf.Graph()
    with graph.as_default():
        tf.random.set_seed(2)
        x = tf.compat.v1.placeholder(tf.float32, [4, 6], name="x")
        with tf.device("/device:CPU:0"):
            a, b = tf.split(x, 2, axis=1, name="split")
            init = tf.no_op(name="init")
        with tf.device("/job:localhost/replica:0/task:0/device:CPU:0"):
            with tf.control_dependencies([init]):
                s = tf.add(a, b, name="sum")
        ids = tf.constant([3, 1, 3, 2, 1], tf.int32, name="ids")
        uniq, idx = tf.unique(ids, name="unique")
        scale = tf.constant(np.linspace(0.5, 1.5, 3, dtype=np.float32),
                            name="scale")
        offset = tf.constant(np.linspace(-0.1, 0.1, 3, dtype=np.float32),
                             name="offset")
        img = tf.reshape(s, [1, 2, 2, 3], name="img")
        bn = tf.compat.v1.nn.fused_batch_norm(
            img, scale, offset, mean=tf.zeros([3]), variance=tf.ones([3]),
            is_training=False, name="bn")
        with tf.control_dependencies([bn[0].op, idx.op]):
            tf.identity(bn[0], name="out")
        tf.cast(uniq, tf.float32, name="uniq_f")
    return graph.as_graph_def()


def write(graph_def, relpath, text=False):
    path = os.path.join(ROOT, relpath)
    mode = "w" if text else "wb"
    with open(path, mode) as f:
        f.write(str(graph_def) if text else graph_def.SerializeToString())
    print("wrote %s (%d nodes)" % (relpath, len(graph_def.node)))


def main():
    write(keras_cnn(), "examples/keras_cnn.pb")
    cd = control_devices()
    write(cd, "tests/data/control_devices.pb")
    write(cd, "tests/data/control_devices.pbtxt", text=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
