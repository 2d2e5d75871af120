"""SavedModels frozen: `graft apply` on a SavedModel inlines its serving
signature, reads the variables as constants, and the rules (batch-norm
folding) see the weights. TensorFlow loads what graft writes, with
tf.saved_model.load and with the session loader TF Serving uses, and
computes the original's outputs. Real models: tf-keras applications with
random batch-norm statistics saved with tf.saved_model.save, and a Keras 3
CNN saved with model.export."""
import os
import time

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from tensorflow.core.protobuf import saved_model_pb2

from conftest import ONEDNN_PASS, folder_digest, module_folder, numbers_report, repo_path
from models import FOLD_RULES, randomize_batch_norms

SIZE = 64
BATCH_NORMS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")


@pytest.fixture(scope="module")
def numbers():
    yield from numbers_report(
        "saved_model_freeze.txt",
        "model: SavedModel size, frozen+folded size, graft apply time, "
        "max |diff| / max |output|")


def tf_keras_model(name):
    rng = np.random.default_rng(1)
    build = getattr(tf_keras.applications, name)
    model = build(weights=None, input_shape=(SIZE, SIZE, 3), classes=10)
    randomize_batch_norms(rng, model, tf_keras.layers.BatchNormalization)
    return model


# With oneDNN on (the test command's second run) one model shows the same
# graph runs there; all three run with it off.
MODELS = (["MobileNetV2"] if ONEDNN_PASS
          else ["MobileNetV2", "EfficientNetB0", "ResNet50"])


@pytest.fixture(scope="module", params=MODELS)
def saved_model(request, tmp_path_factory):
    with module_folder(tmp_path_factory, "sm") as folder:
        path = str(folder / request.param)
        tf.saved_model.save(tf_keras_model(request.param), path)
        yield request.param, path


@pytest.fixture(scope="module")
def served(saved_model):
    """An input batch and the original SavedModel's outputs on it (served
    once per model: each test compares its rewrite with them)."""
    x = np.random.default_rng(3).standard_normal((2, SIZE, SIZE, 3)).astype(np.float32)
    return x, serve(saved_model[1], x)


@pytest.fixture(scope="module")
def keras3_cnn(tmp_path_factory):
    import keras  # Keras 3
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((SIZE, SIZE, 3)),
        keras.layers.Conv2D(8, 3), keras.layers.BatchNormalization(), keras.layers.ReLU(),
        keras.layers.DepthwiseConv2D(3), keras.layers.BatchNormalization(),
        keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(4)])
    rng = np.random.default_rng(2)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            n = layer.get_weights()[0].shape
            layer.set_weights([rng.uniform(0.5, 1.5, n), rng.uniform(-0.5, 0.5, n),
                               rng.uniform(-0.5, 0.5, n), rng.uniform(0.5, 2.0, n)])
    with module_folder(tmp_path_factory, "k3") as folder:
        path = str(folder / "cnn")
        model.export(path, verbose=False)
        yield path


def serve(path, x):
    """The serving signature's outputs, loaded with tf.saved_model.load."""
    loaded = tf.saved_model.load(path)  # kept alive: the signature reads its variables
    fn = loaded.signatures["serving_default"]
    (name,) = fn.structured_input_signature[1].keys()
    return {k: v.numpy() for k, v in fn(**{name: tf.constant(x)}).items()}


def serve_in_session(path, x):
    """The same through the TF1 session loader (what TF Serving runs)."""
    with tf.compat.v1.Session(graph=tf.Graph()) as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], path)
        signature = meta.signature_def["serving_default"]
        (info,) = signature.inputs.values()
        fetches = {k: v.name for k, v in signature.outputs.items()}
        return sess.run(fetches, {info.name: x})


def graph_ops(path):
    model = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        model.ParseFromString(f.read())
    (meta,) = model.meta_graphs
    ops = [n.op for n in meta.graph_def.node]
    for function in meta.graph_def.library.function:
        ops += [n.op for n in function.node_def]
    return ops


def folder_size(path):
    return sum(os.path.getsize(os.path.join(d, f))
               for d, _, files in os.walk(path) for f in files)


def assert_close(want, got):
    assert want.keys() == got.keys()
    for k in want:
        scale = np.abs(want[k]).max()
        assert np.abs(want[k] - got[k]).max() <= 1e-5 * scale + 1e-6, k


def test_freeze_and_fold(graft, saved_model, served, tmp_path, numbers):
    name, path = saved_model
    x, want = served
    before = folder_digest(path)
    out = tmp_path / "folded"
    start = time.perf_counter()
    proc = graft("apply", "-r", FOLD_RULES, path, "-o", out)
    seconds = time.perf_counter() - start
    assert "froze signature(s) serving_default" in proc.stderr, proc.stderr
    ops = graph_ops(str(out))
    assert not [op for op in ops if op in BATCH_NORMS]
    assert "ReadVariableOp" not in ops and "StatefulPartitionedCall" not in ops
    assert not os.path.exists(out / "variables")
    got = serve(str(out), x)
    assert_close(want, got)
    assert_close(want, serve_in_session(str(out), x))
    (k,) = want.keys()
    rel = np.abs(want[k] - got[k]).max() / np.abs(want[k]).max()
    numbers.append("%s: %.1f MiB, %.1f MiB, %.2f s, %.1e" % (
        name, folder_size(path) / 2**20, folder_size(str(out)) / 2**20, seconds, rel))
    # The input SavedModel is untouched (it served `want`).
    assert folder_digest(path) == before


def test_inference_pipeline(graft, saved_model, served, tmp_path):
    name, path = saved_model
    x, outputs = served
    out = tmp_path / "inference"
    graft("apply", "--pipeline", repo_path("rules", "pipelines", "inference.yaml"),
          path, "-o", out)
    ops = graph_ops(str(out))
    assert not [op for op in ops if op in BATCH_NORMS]
    assert "FakeQuantWithMinMaxVars" in ops
    (want,) = outputs.values()
    (got,) = serve(str(out), x).values()
    assert got.shape == want.shape and np.all(np.isfinite(got))


def test_keras3_export(graft, keras3_cnn, tmp_path):
    x = np.random.default_rng(5).standard_normal((2, SIZE, SIZE, 3)).astype(np.float32)
    want = serve(keras3_cnn, x)
    # model.export writes two signatures (serve, serving_default): each is
    # frozen, or only the one chosen.
    for chosen, convs in (([], 2), (["--signature", "serving_default"], 1)):
        out = tmp_path / ("folded%d" % convs)
        graft("apply", "-r", FOLD_RULES, *chosen, keras3_cnn, "-o", out)
        ops = graph_ops(str(out))
        # Keras 3 writes batch norms unfused (Mul/Add): those fold too.
        assert not [op for op in ops if op in BATCH_NORMS + ("Rsqrt",)]
        assert ops.count("Conv2D") == convs and ops.count("DepthwiseConv2dNative") == convs
        assert_close(want, serve(str(out), x))
        assert_close(want, serve_in_session(str(out), x))


def test_frozen_graphdef_and_signature_choice(graft, saved_model, tmp_path):
    name, path = saved_model
    if name != "MobileNetV2":
        pytest.skip("one model is enough")
    pb = tmp_path / "frozen.pb"
    graft("convert", "--saved-model", "freeze", path, pb)
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(pb.read_bytes())
    assert not [n for n in graph_def.node if n.op == "VarHandleOp"]
    bad = graft("apply", "-r", FOLD_RULES, "--signature", "predict", path, "-o",
                tmp_path / "x", check=False)
    assert bad.returncode == 1
    assert "no signature `predict`" in bad.stderr
    assert not os.path.exists(tmp_path / "x")


def foldable_batch_norms(path):
    """Batch norms (inference mode) that read a convolution, directly or
    through its BiasAdd, in the top-level graph or any library function."""
    model = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        model.ParseFromString(f.read())
    (meta,) = model.meta_graphs
    bodies = [list(meta.graph_def.node)]
    bodies += [list(f.node_def) for f in meta.graph_def.library.function]
    found = []
    for nodes in bodies:
        by_name = {n.name: n for n in nodes}

        def producer(name):
            return by_name.get(name.split(":")[0])
        for n in nodes:
            if n.op not in BATCH_NORMS or n.attr["is_training"].b:
                continue
            p = producer(n.input[0])
            if p is not None and p.op == "BiasAdd":
                p = producer(p.input[0])
            if p is not None and p.op in ("Conv2D", "DepthwiseConv2dNative"):
                found.append(n.name)
    return found


def variable_files(path):
    return folder_digest(os.path.join(path, "variables"))


def test_in_place_fold(graft, saved_model, served, tmp_path, numbers):
    """In place, the functions' variable reads are values to the rules: the
    batch norms fold inside the functions the signatures call, the folded
    weights are constants there, and the variables stay as they were."""
    name, path = saved_model
    assert foldable_batch_norms(path)
    out = tmp_path / "in_place"
    start = time.perf_counter()
    proc = graft("apply", "-r", FOLD_RULES, "--saved-model", "in-place", path, "-o", out)
    seconds = time.perf_counter() - start
    assert "variable read(s) folded into constants" in proc.stderr, proc.stderr
    assert foldable_batch_norms(str(out)) == []
    assert variable_files(str(out)) == variable_files(path)
    x, want = served
    assert_close(want, serve(str(out), x))
    assert_close(want, serve_in_session(str(out), x))
    numbers.append("%s in place: %.1f MiB, %.1f MiB, %.2f s" % (
        name, folder_size(path) / 2**20, folder_size(str(out)) / 2**20, seconds))


def test_keras3_export_in_place(graft, keras3_cnn, tmp_path):
    x = np.random.default_rng(7).standard_normal((2, SIZE, SIZE, 3)).astype(np.float32)
    want = serve(keras3_cnn, x)
    out = tmp_path / "in_place"
    graft("apply", "-r", FOLD_RULES, "--saved-model", "in-place", keras3_cnn, "-o", out)
    assert variable_files(str(out)) == variable_files(keras3_cnn)
    ops = graph_ops(str(out))
    assert "Rsqrt" not in ops  # Keras 3's unfused batch norms folded too
    assert_close(want, serve(str(out), x))
    assert_close(want, serve_in_session(str(out), x))
