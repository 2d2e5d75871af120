"""Writes the TensorFlow golden inputs that tf.gradients makes (run from the
repository root with the project's Python: `python tests/golden/make_tf_cases.py`).

checkpoint_scaled_gradient: scaled dot-product attention's scores,
softmax(q k^T / c), whose gradient scales (dA - sum(dA * attn)) * attn by
the constant c: the shape the early-gradient rules regroup."""
import os

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
HERE = os.path.dirname(os.path.abspath(__file__))


def scaled_attention(batch=2, seq=3, dim=4):
    rng = np.random.default_rng(11)
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [batch, seq, dim], name="x")
        w = tf.constant(rng.standard_normal((dim, dim)).astype(np.float32), name="w")
        q = tf.matmul(tf.reshape(x, [batch * seq, dim]), w, name="q")
        q = tf.reshape(q, [batch, seq, dim])
        scores = tf.divide(tf.matmul(q, x, transpose_b=True), np.float32(np.sqrt(dim)),
                           name="scores")
        attn = tf.nn.softmax(scores, name="attn")
        loss = tf.reduce_sum(tf.matmul(attn, x), name="loss")
        tf.gradients(loss, [w], name="gradients")
    return graph


def main():
    out = os.path.join(HERE, "checkpoint_scaled_gradient", "in.pbtxt")
    tf.io.write_graph(scaled_attention().as_graph_def(), os.path.dirname(out),
                      os.path.basename(out), as_text=True)
    print("wrote", os.path.relpath(out, os.path.dirname(os.path.dirname(HERE))))


if __name__ == "__main__":
    main()
