"""`graft apply --onnxoptimizer-passes` (rules/onnx/onnxoptimizer/) beside
onnxoptimizer running the same passes on the same models: graft leaves no
more nodes, and the outputs agree in onnxruntime. fuse_bn_into_conv is
where the two differ by design: onnxoptimizer emits the folded weights'
arithmetic as runtime ops (onnxsim folds them later), graft computes them
into initializers."""
import os

import numpy as np
import onnx
import onnxoptimizer
import onnxruntime as ort
import pytest

from conftest import module_folder, repo_path
from onnx_zoo import example_input, make

PASSES = sorted(f[:-6] for f in os.listdir(repo_path("rules", "onnx", "onnxoptimizer"))
                if f.endswith(".graft"))
ZOO = ["resnet50", "inception_v1", "shufflenet", "squeezenet"]


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    with module_folder(tmp_path_factory, "zoo") as out:
        yield {name: make(name, str(out)) for name in ZOO}


def run(path, feed):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {feed[0]: feed[1]})[0]


def test_every_pass_is_one_of_onnxoptimizers():
    assert len(PASSES) >= 7
    assert set(PASSES) <= set(onnxoptimizer.get_available_passes())


@pytest.mark.parametrize("name", ZOO)
def test_passes_beside_onnxoptimizer(graft, zoo, tmp_path, name):
    src = zoo[name]
    ours = str(tmp_path / "graft.onnx")
    graft("apply", "--onnxoptimizer-passes", ",".join(PASSES), src, "-o", ours)
    theirs = str(tmp_path / "onnxoptimizer.onnx")
    onnx.save(onnxoptimizer.optimize(onnx.load(src), PASSES), theirs)
    onnx.checker.check_model(onnx.load(ours), full_check=True)
    nodes = lambda p: len(onnx.load(p).graph.node)  # noqa: E731
    assert nodes(ours) <= nodes(theirs), (nodes(ours), nodes(theirs))
    feed = example_input(src)
    want = run(src, feed)
    for path in (ours, theirs):
        assert np.abs(run(path, feed) - want).max() <= 1e-5 * np.abs(want).max(), path


CASES = sorted(f[len("opt_"):-len(".onnxtxt")]
               for f in os.listdir(repo_path("tests", "data", "onnx"))
               if f.startswith("opt_") and f.endswith(".onnxtxt"))


@pytest.mark.parametrize("case", CASES)
def test_every_test_block_input_computes_the_same(graft, tmp_path, case):
    """Each test block's input (tests/data/onnx/opt_*.onnxtxt), all passes
    applied, computes what it did in onnxruntime, and passes the checker."""
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / "out.onnx")
    graft("convert", repo_path("tests", "data", "onnx", f"opt_{case}.onnxtxt"), src)
    graft("apply", "--onnxoptimizer-passes", ",".join(PASSES), src, "-o", out)
    onnx.checker.check_model(onnx.load(out), full_check=True)
    model = onnx.load(src)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    want, got = run(src, ("x", x)), run(out, ("x", x))
    assert np.abs(want - got).max() <= 1e-5 * max(1.0, np.abs(want).max())


def test_unknown_pass_is_a_usage_error(graft, zoo, tmp_path):
    out = tmp_path / "out.onnx"
    proc = graft("apply", "--onnxoptimizer-passes", "eliminate_identity,fuse_everything",
                 zoo["squeezenet"], "-o", out, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "unknown pass `fuse_everything`" in proc.stderr
    assert "eliminate_identity" in proc.stderr.split("known:")[1]
    assert not out.exists()
