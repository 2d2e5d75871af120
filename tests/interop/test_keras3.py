"""Keras 3 (`import keras`, TensorFlow's default Keras since 2.16) models as
their users hold them: every batch norm folds (Keras 3 writes them unfused,
as Mul/Add arithmetic after the conv's BiasAdd), by every path a frozen
model takes: `graft.tf.freeze`, a frozen concrete function, and a
`model.export` SavedModel frozen or rewritten in place. The folded model
computes what `model(x)` does (within 1e-5 of the largest output), run by
TensorFlow (the test command runs this file with oneDNN off and on), and
the SavedModels serve through tf.saved_model.load."""
import os
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import convert_to_constants

from conftest import folder_digest, module_folder, repo_path, run_graph
from models import FOLD_RULES, batch_norms_left, graft_apply, last_identity, randomize_batch_norms

# The package scripts/build_wheel.sh stages (the test command builds it first).
sys.path.insert(0, repo_path("build", "python"))
import graft  # noqa: E402
import graft.tf  # noqa: E402

keras = pytest.importorskip("keras")
if not keras.__version__.startswith("3."):
    pytest.skip("Keras 3 is not what `import keras` gives here", allow_module_level=True)
layers = keras.layers

RNG = np.random.default_rng(13)


def applied(report, rule):
    return sum(r["applied"] for r in report["rules"] if r["name"] == rule)

TOLERANCE = 1e-5


def assert_close(want, got):
    want, got = np.asarray(want), np.asarray(got)
    assert want.shape == got.shape
    scale = np.abs(want).max()
    assert scale > 0
    assert np.abs(want - got).max() <= TOLERANCE * scale, np.abs(want - got).max() / scale


def model_of(input_shape, *stack):
    inp = keras.Input(input_shape)
    x = inp
    for layer in stack:
        x = layer(x)
    model = keras.Model(inp, x)
    randomize_batch_norms(RNG, model, layers.BatchNormalization)
    return model


# Each linear layer Keras 3 writes a different graph for, followed by a
# batch norm (and one batch norm without scale and centre: its own form).
LAYER_FORMS = {
    "conv1d": lambda: model_of((12, 3), layers.Conv1D(6, 3), layers.BatchNormalization()),
    "conv2d": lambda: model_of((10, 10, 3), layers.Conv2D(6, 3), layers.BatchNormalization(),
                               layers.ReLU()),
    "conv2d_no_bias": lambda: model_of((10, 10, 3), layers.Conv2D(6, 3, use_bias=False),
                                       layers.BatchNormalization()),
    "conv3d": lambda: model_of((5, 5, 5, 2), layers.Conv3D(4, 3), layers.BatchNormalization()),
    "depthwise": lambda: model_of((10, 10, 3), layers.DepthwiseConv2D(3, depth_multiplier=2),
                                  layers.BatchNormalization()),
    "separable": lambda: model_of((10, 10, 3), layers.SeparableConv2D(5, 3),
                                  layers.BatchNormalization()),
    "dense": lambda: model_of((7,), layers.Dense(5), layers.BatchNormalization()),
    "bn_without_scale_and_centre": lambda: model_of(
        (10, 10, 3), layers.Conv2D(6, 3), layers.BatchNormalization(scale=False, center=False)),
}


@pytest.mark.parametrize("form", list(LAYER_FORMS))
def test_layer_forms(form):
    model = LAYER_FORMS[form]()
    frozen = graft.tf.freeze(model)
    assert batch_norms_left(frozen.to_graph_def().node)  # the unfused form is there
    folded, report = graft.apply(frozen, "fold_batch_norms")
    assert applied(report, "fold_unfused_batch_norm") == 1
    graph_def = folded.to_graph_def()
    assert batch_norms_left(graph_def.node) == []
    x = RNG.standard_normal((3,) + tuple(model.input.shape[1:])).astype(np.float32)
    assert_close(model(x, training=False), graft.tf.to_function(folded)(x))


APPLICATIONS = {
    "MobileNetV2": 64,
    "EfficientNetB0": 64,
    "ResNet50": 64,
}


@pytest.fixture(scope="module", params=list(APPLICATIONS))
def application(request):
    size = APPLICATIONS[request.param]
    model = getattr(keras.applications, request.param)(
        weights=None, input_shape=(size, size, 3), classes=10)
    randomize_batch_norms(np.random.default_rng(14), model, layers.BatchNormalization)
    x = np.random.default_rng(15).standard_normal((2, size, size, 3)).astype(np.float32)
    return request.param, model, x, np.asarray(model(x, training=False))


def test_application_graft_tf_freeze(application):
    name, model, x, want = application
    frozen = graft.tf.freeze(model)
    bns = len([n for n in model.layers if isinstance(n, layers.BatchNormalization)])
    folded, report = graft.apply(frozen, "fold_batch_norms")
    assert applied(report, "fold_unfused_batch_norm") == bns
    assert batch_norms_left(folded.to_graph_def().node) == []
    assert_close(want, graft.tf.to_function(folded)(x))


def test_application_frozen_concrete_function(application, tmp_path):
    name, model, x, want = application
    fn = tf.function(lambda t: model(t, training=False)).get_concrete_function(
        tf.TensorSpec([None] + list(x.shape[1:]), tf.float32, name="input"))
    original = convert_to_constants.convert_variables_to_constants_v2(fn).graph.as_graph_def()
    folded, log = graft_apply(original, tmp_path, name, "-r", FOLD_RULES)
    assert batch_norms_left(folded.node) == [], log
    assert len(folded.node) < len(original.node)
    assert_close(want, run_graph(folded, {"input:0": x}, last_identity(original)))


def saved_model_nodes(path):
    """The NodeDefs of a SavedModel's graph, each function body apart."""
    model = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        model.ParseFromString(f.read())
    (meta,) = model.meta_graphs
    return [list(meta.graph_def.node)] + [list(f.node_def) for f in meta.graph_def.library.function]


def serve(path, x):
    loaded = tf.saved_model.load(path)
    fn = loaded.signatures["serving_default"]
    (name,) = fn.structured_input_signature[1].keys()
    (out,) = fn(**{name: tf.constant(x)}).values()
    return out.numpy()


@pytest.fixture(scope="module")
def exported(application, tmp_path_factory):
    """The application's `model.export` SavedModel (one per module: each
    mode reads it, and leaves it as it was)."""
    name, model, _, _ = application
    with module_folder(tmp_path_factory, "export") as folder:
        model.export(str(folder / name), verbose=False)
        yield str(folder / name)


@pytest.mark.parametrize("mode", ["freeze", "in-place"])
def test_application_export(application, exported, graft, tmp_path, mode):
    name, model, x, want = application
    before = folder_digest(exported)
    out = tmp_path / "folded"
    proc = graft("apply", "-r", FOLD_RULES, exported, "-o", out, "--saved-model", mode)
    assert "fold_unfused_batch_norm" in proc.stderr, proc.stderr
    for nodes in saved_model_nodes(str(out)):
        assert batch_norms_left(nodes) == []
    assert_close(want, serve(str(out), x))
    assert folder_digest(exported) == before  # the input is untouched
