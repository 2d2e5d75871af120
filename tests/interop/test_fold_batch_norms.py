"""Batch-norm folding (rules/tf/fold_batch_norms.graft) on real TensorFlow models:
no foldable batch norm remains, and TensorFlow runs the folded graph with the
same numbers (max |difference| <= 1e-4 x max |output|, float32)."""
import subprocess

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from conftest import graft_binary, repo_path, run_graph
from models import FOLD_RULES, batch_norms_left, freeze, graft_apply, last_identity, random_stats, randomize_batch_norms

RNG = np.random.default_rng(7)


def fold(graph_def, tmp_path, name):
    return graft_apply(graph_def, tmp_path, name, "-r", FOLD_RULES)


def foldable_left(graph_def):
    return batch_norms_left(graph_def.node)


def check_same(original, folded, shape, fetch="Identity:0", input_name="input:0",
               dtype=np.float32, tolerance=1e-4):
    """Both graphs on one random input: outputs within `tolerance` of the
    largest (compared in float32)."""
    x = RNG.standard_normal(shape).astype(dtype)
    want = run_graph(original, {input_name: x}, fetch).astype(np.float32)
    got = run_graph(folded, {input_name: x}, fetch).astype(np.float32)
    scale = np.abs(want).max()
    assert scale > 0
    assert np.abs(want - got).max() <= tolerance * scale, np.abs(want - got).max() / scale


def test_example_model(tmp_path):
    original = tf.compat.v1.GraphDef()
    original.ParseFromString(open(repo_path("examples", "keras_cnn.pb"), "rb").read())
    folded, log = fold(original, tmp_path, "example")
    assert foldable_left(folded) == [], log
    check_same(original, folded, (4, 32, 32, 3))


def test_readme_tutorial_rule(tmp_path):
    """examples/fold_bn.graft, the README's five-minute rule: 3 of the example's
    4 batch norms folded (the fourth follows a BiasAdd), same numbers."""
    original = tf.compat.v1.GraphDef()
    original.ParseFromString(open(repo_path("examples", "keras_cnn.pb"), "rb").read())
    folded, log = graft_apply(original, tmp_path, "tutorial", "-r", repo_path("examples", "fold_bn.graft"))
    assert "fold_bn: 3 applied" in log, log
    assert len([n for n in folded.node if n.op == "FusedBatchNormV3"]) == 1
    check_same(original, folded, (4, 32, 32, 3))


@pytest.mark.parametrize("name,ctor,size", [
    ("mobilenet_v2", tf_keras.applications.MobileNetV2, 96),
    ("resnet50", tf_keras.applications.ResNet50, 64),
    ("efficientnet_b0", tf_keras.applications.EfficientNetB0, 64),
])
def test_tf_keras_applications(tmp_path, name, ctor, size):
    model = ctor(weights=None, input_shape=(size, size, 3), classes=10)
    randomize_batch_norms(RNG, model, tf_keras.layers.BatchNormalization)
    original = freeze(model, [None, size, size, 3])
    bns = sum(1 for n in original.node if n.op.startswith("FusedBatchNorm"))
    assert bns > 40
    folded, log = fold(original, tmp_path, name)
    assert foldable_left(folded) == [], log
    assert len(folded.node) < len(original.node)
    fetch = last_identity(original)
    check_same(original, folded, (2, size, size, 3), fetch)


@pytest.mark.parametrize("policy", ["float16", "mixed_float16"])
def test_half_precision(tmp_path, policy):
    """float16 graphs (T=half, U=float batch norms) and mixed precision
    (float32 weights cast to float16 on the way to the conv) fold, and give
    TensorFlow's numbers to float16 precision."""
    tf_keras.mixed_precision.set_global_policy(policy)
    try:
        inp = tf_keras.Input((16, 16, 3))
        # With a bias: mixed precision reads it through a Cast to float16.
        x = tf_keras.layers.Conv2D(8, 3, use_bias=True)(inp)
        x = tf_keras.layers.BatchNormalization()(x)
        x = tf_keras.layers.ReLU()(x)
        x = tf_keras.layers.DepthwiseConv2D(3, use_bias=False)(x)
        x = tf_keras.layers.BatchNormalization()(x)
        x = tf_keras.layers.GlobalAveragePooling2D()(x)
        out = tf_keras.layers.Dense(5, dtype="float32")(x)
        model = tf_keras.Model(inp, out)
    finally:
        tf_keras.mixed_precision.set_global_policy("float32")
    randomize_batch_norms(RNG, model, tf_keras.layers.BatchNormalization)
    in_dtype = tf.float16 if policy == "float16" else tf.float32
    fn = tf.function(lambda t: model(t, training=False)).get_concrete_function(
        tf.TensorSpec([None, 16, 16, 3], in_dtype, name="input"))
    from tensorflow.python.framework import convert_to_constants
    original = convert_to_constants.convert_variables_to_constants_v2(fn).graph.as_graph_def()
    half_bns = [n for n in original.node if n.op == "FusedBatchNormV3" and n.attr["T"].type == tf.float16.as_datatype_enum]
    assert len(half_bns) == 2
    folded, log = fold(original, tmp_path, policy)
    assert foldable_left(folded) == [], log
    # float16 keeps about 3 decimal digits; folding rounds differently.
    check_same(original, folded, (4, 16, 16, 3), last_identity(original),
               dtype=in_dtype.as_numpy_dtype, tolerance=1e-2)


def test_mixed_precision_application(tmp_path):
    """A tf-keras application under mixed_float16 (ResNet50: convolutions
    with biases, read through Casts, before their batch norms): every batch
    norm folds, and TensorFlow gives the same numbers to float16 precision."""
    tf_keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = tf_keras.applications.ResNet50(weights=None, input_shape=(64, 64, 3), classes=10)
    finally:
        tf_keras.mixed_precision.set_global_policy("float32")
    randomize_batch_norms(RNG, model, tf_keras.layers.BatchNormalization)
    original = freeze(model, [None, 64, 64, 3])
    casts = [n for n in original.node if n.op == "Cast"]
    assert len(casts) > 50  # weights and biases cast to float16
    folded, log = fold(original, tmp_path, "resnet50_mixed")
    assert foldable_left(folded) == [], log
    check_same(original, folded, (2, 64, 64, 3), last_identity(original), tolerance=2e-2)


def test_keras3_unfused_batch_norms(tmp_path):
    import keras  # Keras 3
    model = keras.Sequential([
        keras.Input((16, 16, 3)),
        keras.layers.Conv2D(8, 3, use_bias=False),
        keras.layers.BatchNormalization(),
        keras.layers.ReLU(),
        keras.layers.DepthwiseConv2D(3, use_bias=False),
        keras.layers.BatchNormalization(),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(5),
    ])
    randomize_batch_norms(RNG, model, keras.layers.BatchNormalization)
    original = freeze(model, [None, 16, 16, 3])
    assert not any("BatchNorm" in n.op for n in original.node)  # unfused form
    folded, log = fold(original, tmp_path, "keras3")
    assert foldable_left(folded) == [], log
    assert "fold_unfused_batch_norm: 2 applied" in log
    check_same(original, folded, (3, 16, 16, 3))


def hand_built():
    """Depthwise conv with channel multiplier 2, a conv with a BiasAdd before
    its BN, and FusedBatchNorm v1, built with TF1 ops."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 8, 8, 3], name="input")

        def bn(t, channels, name, op=tf.compat.v1.nn.fused_batch_norm):
            g, b, m, v = (tf.constant(a.astype(np.float32)) for a in random_stats(RNG, (channels,)))
            return op(t, g, b, mean=m, variance=v, epsilon=1e-3, is_training=False, name=name)[0]

        dw = tf.nn.depthwise_conv2d(x, tf.constant(RNG.standard_normal((3, 3, 3, 2)).astype(np.float32)),
                                    [1, 1, 1, 1], "SAME", name="dw")
        y = tf.nn.relu(bn(dw, 6, "bn_dw"))
        conv = tf.nn.conv2d(y, tf.constant(RNG.standard_normal((1, 1, 6, 4)).astype(np.float32)),
                            [1, 1, 1, 1], "SAME", name="conv")
        biased = tf.nn.bias_add(conv, tf.constant(RNG.standard_normal(4).astype(np.float32)))
        z = bn(biased, 4, "bn_conv")
        tf.identity(z, name="Identity")
    return graph.as_graph_def()


def test_hand_built_graph(tmp_path):
    original = hand_built()
    folded, log = fold(original, tmp_path, "hand")
    assert foldable_left(folded) == [], log
    check_same(original, folded, (2, 8, 8, 3))


def test_nothing_to_fold_comes_back_unchanged(tmp_path):
    src = repo_path("tests", "data", "control_devices.pb")
    out = tmp_path / "same.pb"
    proc = subprocess.run([graft_binary(), "apply", "-r", FOLD_RULES, src, "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == open(src, "rb").read()
