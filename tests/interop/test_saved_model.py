"""SavedModels in place: TensorFlow loads what graft writes. A round trip
keeps the graph and every variable shard byte for byte and computes the
same; rules rewrite the functions' bodies (not the checkpoint's save and
restore) and the result loads, restores its variables and serves."""
import filecmp
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from conftest import module_folder, repo_path

RNG = np.random.default_rng(0)


@pytest.fixture(scope="module")
def mobilenet(tmp_path_factory):
    model = tf_keras.applications.MobileNetV2(weights=None, input_shape=(64, 64, 3), classes=10)
    with module_folder(tmp_path_factory, "sm") as folder:
        path = str(folder / "mobilenet")
        tf.saved_model.save(model, path)
        yield path


def serve(path, x):
    loaded = tf.saved_model.load(path)
    outputs = loaded.signatures["serving_default"](tf.constant(x))
    return {k: v.numpy() for k, v in outputs.items()}, loaded


def test_round_trip(graft, mobilenet, tmp_path):
    out = tmp_path / "copy"
    graft("convert", mobilenet, out)
    for name in os.listdir(os.path.join(mobilenet, "variables")):
        assert filecmp.cmp(os.path.join(mobilenet, "variables", name),
                           out / "variables" / name, shallow=False), name
    x = RNG.standard_normal((2, 64, 64, 3)).astype(np.float32)
    want, _ = serve(mobilenet, x)
    got, loaded = serve(str(out), x)
    assert want.keys() == got.keys()
    for k in want:
        assert np.array_equal(want[k], got[k])
    assert len(loaded.variables) > 100  # restored from the copied bundle


def test_rules_in_function_bodies(graft, mobilenet, tmp_path):
    out = tmp_path / "quantized"
    proc = graft("apply", "--saved-model", "in-place", "--pipeline",
                 repo_path("rules", "pipelines", "inference.yaml"), mobilenet, "-o", out)
    assert "quantize_activation" in proc.stderr, proc.stderr
    assert "__inference__traced_save" in proc.stderr and "not rewritten" in proc.stderr
    diff = graft("diff", mobilenet, out).stdout
    assert "function __inference__wrapped_model" in diff
    assert "function __inference__traced" not in diff
    x = RNG.standard_normal((2, 64, 64, 3)).astype(np.float32)
    want, _ = serve(mobilenet, x)
    got, loaded = serve(str(out), x)
    (k,) = want.keys()
    assert want[k].shape == got[k].shape and np.all(np.isfinite(got[k]))
    # 8-bit fake quantization: close, not equal.
    assert 0 < np.abs(want[k] - got[k]).max() <= 0.1 * np.abs(want[k]).max() + 1e-3
    # The checkpoint functions still save what was restored.
    ckpt = tf.train.Checkpoint(model=loaded)
    ckpt.write(str(tmp_path / "ckpt" / "c"))
