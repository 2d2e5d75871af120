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


def _train(loss, learning_rate=0.01, variables=None, initialized=None):
    """tf.gradients and SGD updates of `variables` (the trainable ones unless
    given); the gradients are also `grad_<i>`, and `init` initializes
    `initialized` (every variable unless given), for running an exported
    graph."""
    variables = tf1.trainable_variables() if variables is None else variables
    grads = tf.gradients(loss, variables)
    grads = [tf.identity(g, name="grad_%d" % i) for i, g in enumerate(grads)]
    updates = [tf1.assign_sub(v, learning_rate * g) for v, g in zip(variables, grads)]
    tf1.variables_initializer(tf1.global_variables() if initialized is None else initialized,
                              name="init")
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


def dense_chain(layers=100, batch=16, width=32):
    """A chain of dense + ReLU layers and a sigmoid cross-entropy loss
    (its gradient: Select, Exp, Log1p, ...)."""
    rng = np.random.default_rng(2)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [batch, width], name="x")
        labels = tf1.placeholder(tf.float32, [batch, 1], name="labels")
        h = x
        for i in range(layers):
            h = tf.nn.relu(_dense(h, width, "dense%d" % i, rng))
        logits = _dense(h, 1, "logits", rng)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=logits), name="loss")
        _train(loss)
    return graph


def dropout_chain(layers=4, batch=2, width=4):
    """A dense chain with dropout after its second layer (a RandomUniform:
    stateful, never recomputed) and a sigmoid cross-entropy."""
    rng = np.random.default_rng(7)
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(0)
        x = tf1.placeholder(tf.float32, [batch, width], name="x")
        labels = tf1.placeholder(tf.float32, [batch, 1], name="labels")
        h = x
        for i in range(layers):
            h = tf.nn.relu(_dense(h, width, "dense%d" % i, rng))
            if i == 1:
                h = tf.nn.dropout(h, rate=0.5, seed=1, name="dropout")
        logits = _dense(h, 1, "logits", rng)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=logits), name="loss")
        _train(loss)
    return graph


def unet(batch=2, size=32, bias=False):
    """A small U-Net: strided convs down, conv2d_transpose up, skip
    connections by concatenation (ConcatOffset and Slice in the gradient),
    a per-pixel sigmoid cross-entropy. With `bias`, every conv is followed
    by a BiasAdd (what TensorFlow's oneDNN layout pass fuses)."""
    rng = np.random.default_rng(3)

    def conv(x, channels, name, rng):
        y = _conv(x, channels, name, rng)
        if not bias:
            return y
        b = tf1.get_variable(name + "/b", initializer=rng.standard_normal(
            channels).astype(np.float32) * 0.1)
        return tf.nn.bias_add(y, b, name=name + "/bias")

    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [batch, size, size, 3], name="x")
        labels = tf1.placeholder(tf.float32, [batch, size, size, 1], name="labels")
        skips, h = [], x
        for i, c in enumerate([8, 16, 32]):
            h = tf.nn.relu(conv(h, c, "down%d" % i, rng))
            skips.append(h)
            h = tf.nn.max_pool2d(h, 2, 2, "SAME", name="pool%d" % i)
        h = tf.nn.relu(conv(h, 64, "bottom", rng))
        for i, skip in reversed(list(enumerate(skips))):
            c = int(skip.shape[-1])
            w = tf1.get_variable("up%d/w" % i, initializer=rng.standard_normal(
                (2, 2, c, int(h.shape[-1]))).astype(np.float32) * 0.1)
            h = tf.nn.conv2d_transpose(h, w, tf.shape(skip), [1, 2, 2, 1], "SAME",
                                       name="up%d" % i)
            h = tf.reshape(h, skip.shape)
            h = tf.concat([h, skip], axis=3, name="cat%d" % i)
            h = tf.nn.relu(conv(h, c, "dec%d" % i, rng))
        logits = conv(h, 1, "head", rng)
        loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=labels, logits=logits), name="loss")
        _train(loss)
    return graph


def resnet18(batch=2, size=32, classes=10):
    """ResNet-18's layout (four stages of two basic blocks, projections on
    the strided ones) at small widths, with fused batch norms in training
    mode."""
    rng = np.random.default_rng(4)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [batch, size, size, 3], name="x")
        labels = tf1.placeholder(tf.int32, [batch], name="labels")
        h = tf.nn.relu(_batch_norm(_conv(x, 8, "stem", rng), "stem_bn"))
        for s, c in enumerate([8, 16, 32, 64]):
            for b in range(2):
                stride = 2 if s > 0 and b == 0 else 1
                name = "s%d_b%d" % (s, b)
                y = tf.nn.relu(_batch_norm(_conv(h, c, name + "_c1", rng, stride), name + "_bn1"))
                y = _batch_norm(_conv(y, c, name + "_c2", rng), name + "_bn2")
                if stride != 1 or int(h.shape[-1]) != c:
                    h = _batch_norm(_conv(h, c, name + "_proj", rng, stride), name + "_pbn")
                h = tf.nn.relu(y + h, name=name + "_out")
        h = tf.reduce_mean(h, axis=[1, 2], name="gap")
        logits = _dense(h, classes, "logits", rng)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits), name="loss")
        _train(loss)
    return graph


def cifar_resnet(blocks=8, batch=16, size=32, classes=10):
    """A deep CIFAR-style ResNet: three stages of `blocks` basic blocks
    (6 * blocks + 2 layers: 50 with 8), fused batch norms in training mode."""
    rng = np.random.default_rng(6)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [batch, size, size, 3], name="x")
        labels = tf1.placeholder(tf.int32, [batch], name="labels")
        h = tf.nn.relu(_batch_norm(_conv(x, 16, "stem", rng), "stem_bn"))
        for s, c in enumerate([16, 32, 64]):
            for b in range(blocks):
                stride = 2 if s > 0 and b == 0 else 1
                name = "s%d_b%d" % (s, b)
                y = tf.nn.relu(_batch_norm(_conv(h, c, name + "_c1", rng, stride), name + "_bn1"))
                y = _batch_norm(_conv(y, c, name + "_c2", rng), name + "_bn2")
                if stride != 1 or int(h.shape[-1]) != c:
                    h = _conv(h, c, name + "_proj", rng, stride)
                h = tf.nn.relu(y + h, name=name + "_out")
        h = tf.reduce_mean(h, axis=[1, 2], name="gap")
        logits = _dense(h, classes, "logits", rng)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits), name="loss")
        _train(loss)
    return graph


def transformer_block(batch=2, seq=16, dim=32, heads=4, classes=10, blocks=1):
    """`blocks` transformer encoder blocks: multi-head attention with batched
    matmuls (BatchMatMulV2) and transposes (their gradients transpose by
    a computed, inverted permutation), softmax, layer norms from moments, a
    ReLU feed-forward; softmax cross-entropy on the mean token."""
    rng = np.random.default_rng(5)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [batch, seq, dim], name="x")
        labels = tf1.placeholder(tf.float32, [batch, classes], name="labels")

        def proj(t, units, name):
            w = tf1.get_variable(name + "/w", initializer=rng.standard_normal(
                (int(t.shape[-1]), units)).astype(np.float32) * 0.1)
            return tf.matmul(t, w, name=name)

        def split(t):
            t = tf.reshape(t, [batch, seq, heads, dim // heads])
            return tf.transpose(t, [0, 2, 1, 3])

        def layer_norm(t, name):
            mean, var = tf.nn.moments(t, axes=[-1], keepdims=True, name=name)
            return (t - mean) * tf.math.rsqrt(var + 1e-6)

        def block(x, prefix):
            q, k, v = (split(proj(x, dim, prefix + n)) for n in ("q", "k", "v"))
            scores = tf.matmul(q, k, transpose_b=True) / np.sqrt(dim // heads)
            attn = tf.matmul(tf.nn.softmax(scores, name=prefix + "attn"), v)
            attn = tf.reshape(tf.transpose(attn, [0, 2, 1, 3]), [batch, seq, dim])
            h = layer_norm(x + proj(attn, dim, prefix + "o"), prefix + "ln1")
            return layer_norm(h + proj(tf.nn.relu(proj(h, 2 * dim, prefix + "ff1")), dim,
                                       prefix + "ff2"), prefix + "ln2")

        h = x
        for i in range(blocks):
            h = block(h, "" if blocks == 1 else "block%d/" % i)
        logits = proj(tf.reduce_mean(h, axis=1), classes, "logits")
        loss = tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
        _train(loss)
    return graph


def keras_resnet50(batch=32, size=224, classes=1000):
    """tf-keras's ResNet50 (`weights=None`) as Keras writes it, called with
    `training=True` (its batch norms use the batch's statistics, with no
    learning-phase branches), softmax cross-entropy `loss`; its
    initializers hold Fills of ones besides the gradient seed."""
    import tf_keras
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(0)
        x = tf1.placeholder(tf.float32, [batch, size, size, 3], name="x")
        labels = tf1.placeholder(tf.float32, [batch, classes], name="labels")
        model = tf_keras.applications.ResNet50(
            weights=None, input_shape=(size, size, 3), classes=classes,
            classifier_activation=None)
        logits = model(x, training=True)
        loss = tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="loss")
        _train(loss, variables=model.trainable_variables, initialized=model.variables)
    # Without the functional model's own forward pass on its input
    # placeholder, which the step never runs.
    graph_def = graph.as_graph_def()
    keep = ["train", "loss", "init"] + [n.name for n in graph_def.node if n.name.startswith("grad_")]
    pruned = tf.Graph()
    with pruned.as_default():
        tf1.import_graph_def(tf1.graph_util.extract_sub_graph(graph_def, keep), name="")
    return pruned


MODELS = {"mlp_train": mlp, "convnet_train": convnet}
# Graphs whose every shape graft must know as TensorFlow does
# (tests/interop/test_training_analyses.py).
SHAPE_MODELS = {"dense_chain_100": dense_chain, "unet": unet,
                "resnet18": resnet18, "transformer_block": transformer_block}


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
