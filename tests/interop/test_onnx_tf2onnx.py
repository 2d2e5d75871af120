"""graft on ONNX models TensorFlow's exporter wrote (tf2onnx, tf-keras
applications: tests/interop/tf2onnx_zoo.py): every value named `name:0`,
which the IR must not read as a port. Round trip byte for byte and
bitwise equal in onnxruntime, validation as onnx.checker, folding (a
no-op: tf2onnx folds its batch norms) leaves the outputs, and shapes as
onnx.shape_inference's."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest

from conftest import module_folder, repo_path
from onnx_zoo import assert_shapes_agree
from tf2onnx_zoo import MODELS, make

FOLD = repo_path("rules", "onnx", "fold_batch_norms.graft")


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    with module_folder(tmp_path_factory, "tf2onnx") as out:
        yield {name: make(name, str(out)) for name in MODELS}


def run(path, x):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_tf2onnx_models(graft, zoo, tmp_path, name):
    src = zoo[name]
    model = onnx.load(src)
    assert any(t.name.endswith(":0") for t in model.graph.initializer)
    graft("validate", src)
    copy, folded = str(tmp_path / "copy.onnx"), str(tmp_path / "folded.onnx")
    graft("convert", src, copy)
    with open(src, "rb") as a, open(copy, "rb") as b:
        assert a.read() == b.read()
    graft("apply", "-r", FOLD, src, "-o", folded)
    onnx.checker.check_model(onnx.load(folded), full_check=True)
    x = np.random.default_rng(0).standard_normal((1, 96, 96, 3)).astype(np.float32)
    want = run(src, x)
    assert np.array_equal(run(copy, x), want)
    assert np.abs(run(folded, x) - want).max() <= 1e-5 * np.abs(want).max()
    assert_shapes_agree(graft, src)
