"""Training graphs for graft's analyses: tf.compat.v1 graph mode, forward
pass, loss, tf.gradients and plain SGD updates, exported as GraphDefs.

  .venv/bin/python tests/interop/training_graphs.py OUT_DIR

writes mlp_train.pb and convnet_train.pb (and .pbtxt copies) to OUT_DIR.
Variables are kept (a training graph), with fixed batch sizes so that every
shape is static."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1


def _dense(x, units, name, rng):
    w = tf1.get_variable(name + "/w", initializer=rng.standard_normal(
        (int(x.shape[-1]), units)).astype(np.float32) * 0.1)
    b = tf1.get_variable(name + "/b", initializer=np.zeros(units, np.float32))
    return tf.nn.bias_add(tf.matmul(x, w), b, name=name)


def _conv(x, channels, name, rng, stride=1):
    w = tf1.get_variable(name + "/w", initializer=rng.standard_normal(
        (3, 3, int(x.shape[-1]), channels)).astype(np.float32) * 0.1)
    return tf.nn.conv2d(x, w, [1, stride, stride, 1], "SAME", name=name)


def _batch_norm(x, name):
    c = int(x.shape[-1])
    scale = tf1.get_variable(name + "/gamma", initializer=np.ones(c, np.float32))
    offset = tf1.get_variable(name + "/beta", initializer=np.zeros(c, np.float32))
    y, _, _ = tf1.nn.fused_batch_norm(x, scale, offset, is_training=True, name=name)
    return y


def _train(loss, learning_rate=0.01):
    variables = tf1.trainable_variables()
    grads = tf.gradients(loss, variables)
    updates = [tf1.assign_sub(v, learning_rate * g) for v, g in zip(variables, grads)]
    return tf.group(*updates, name="train")


def mlp(batch=32, features=64, hidden=(128, 128, 64), classes=10):
    """An MLP with ReLU, softmax cross-entropy loss."""
    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [batch, features], name="x")
        labels = tf1.placeholder(tf.float32, [batch, classes], name="labels")
        h = x
        for i, units in enumerate(hidden):
            h = tf.nn.relu(_dense(h, units, "dense%d" % i, rng))
        logits = _dense(h, classes, "logits", rng)
        loss = tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
        _train(loss)
    return graph


def convnet(batch=8, size=32, classes=10):
    """A small ResNet-style net: conv / fused batch norm / relu, two residual
    blocks (one strided, with a projection), max pooling, global average
    pooling, a dense layer, sparse softmax cross-entropy."""
    rng = np.random.default_rng(1)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [batch, size, size, 3], name="x")
        labels = tf1.placeholder(tf.int32, [batch], name="labels")
        h = tf.nn.relu(_batch_norm(_conv(x, 16, "stem", rng), "stem_bn"))
        h = tf.nn.max_pool2d(h, 2, 2, "SAME", name="pool")
        for i, (channels, stride) in enumerate([(16, 1), (32, 2)]):
            y = tf.nn.relu(_batch_norm(_conv(h, channels, "b%d_c1" % i, rng, stride), "b%d_bn1" % i))
            y = _batch_norm(_conv(y, channels, "b%d_c2" % i, rng), "b%d_bn2" % i)
            shortcut = h if stride == 1 else _conv(h, channels, "b%d_proj" % i, rng, stride)
            h = tf.nn.relu(y + shortcut, name="b%d_out" % i)
        h = tf.reduce_mean(h, axis=[1, 2], name="gap")
        logits = _dense(h, classes, "logits", rng)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits), name="loss")
        _train(loss)
    return graph


MODELS = {"mlp_train": mlp, "convnet_train": convnet}


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name, build in MODELS.items():
        graph_def = build().as_graph_def()
        with open(os.path.join(out_dir, name + ".pb"), "wb") as f:
            f.write(graph_def.SerializeToString())
        with open(os.path.join(out_dir, name + ".pbtxt"), "w") as f:
            f.write(str(graph_def))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
