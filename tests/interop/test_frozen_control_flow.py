"""Frozen control flow as TensorFlow writes it: convert_variables_to_constants_v2
with lower_control_flow=False keeps tf.cond and tf.while_loop as If and
While ops whose branch and body functions get the weights as arguments,
passed in from top-level Consts. graft shows those arguments to the rules
as the constants every call passes, so the batch norms inside the bodies
fold; TensorFlow computes the function's own outputs (within 1e-5 of the
largest) for both branches and several loop counts. This file runs with
oneDNN off and on (the test command); the reference is the tf.function
itself, run eagerly (TensorFlow 2.21 with oneDNN on fails to run the
original frozen graph's loop: "Missing 0-th output from
while/FusedBatchNormV3"; the folded graph runs)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from google.protobuf import text_format

from conftest import ONEDNN_PASS, repo_path
from models import FOLD_RULES, graft_apply

sys.path.insert(0, repo_path("tests", "data"))
import make_tf_producers  # noqa: E402

tf1 = tf.compat.v1
FEEDS = [(flag, n) for flag in (True, False) for n in (0, 1, 3)]
X = np.random.default_rng(21).standard_normal((2, 8, 8, 3)).astype(np.float32)


def run_graph_with(graph_def, feeds):
    """`out:0` of a frozen graph for each feed dict, in a Session."""
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    with tf1.Session(graph=graph) as sess:
        return [sess.run("out:0", feed) for feed in feeds]


def run_frozen(graph_def, feeds):
    """`out:0` for each (flag, n)."""
    return run_graph_with(graph_def, [{"x:0": X, "flag:0": flag, "n:0": n} for flag, n in feeds])


def fused_batch_norms(graph_def):
    """The batch norms left in the library functions' bodies, by function."""
    return {f.signature.name: n for f in graph_def.library.function
            if (n := sum(node.op.startswith("FusedBatchNorm") for node in f.node_def))}


@pytest.fixture(scope="module")
def model():
    fn, specs = make_tf_producers.control_flow_function()
    frozen = make_tf_producers.frozen(fn, *specs, lower_control_flow=False)
    want = [fn(tf.constant(X), tf.constant(flag), tf.constant(n)).numpy() for flag, n in FEEDS]
    return frozen, want


def test_batch_norms_in_branches_and_loop_fold(model, tmp_path):
    original, want = model
    assert len(fused_batch_norms(original)) == 3  # both branches and the body
    # The weights reach the bodies as arguments, not constants.
    assert not any(n.op == "Const" and "Conv2D" in n.name
                   for f in original.library.function for n in f.node_def)
    folded, log = graft_apply(original, tmp_path, "control_flow", "-r", FOLD_RULES)
    assert fused_batch_norms(folded) == {}, log
    assert "fold_fused_batch_norm: 3 applied" in log
    assert log.count("argument(s) seen as constants, 5 folded") == 3, log
    for w, g in zip(want, run_frozen(folded, FEEDS)):
        scale = np.abs(w).max()
        assert np.abs(w - g).max() <= 1e-5 * scale, np.abs(w - g).max() / scale
    # Signatures and calls stay as they were: every caller still works.
    sig = {f.signature.name: f.signature for f in original.library.function}
    for f in folded.library.function:
        assert f.signature == sig[f.signature.name]
    assert [n for n in folded.node] == [n for n in original.node]


def test_the_committed_graph_folds_too(tmp_path, graft):
    """tests/data/tf_producers/control_flow.pbtxt (what the rule tests and
    the engine's tests read) as the CLI sees it; explain names the matches
    inside the bodies and the arguments it sees as constants."""
    path = repo_path("tests", "data", "tf_producers", "control_flow.pbtxt")
    proc = graft("explain", "-r", FOLD_RULES, path, "--rule", "fold_fused_batch_norm")
    assert proc.stdout.count("in function") == 3, proc.stdout
    assert proc.stdout.count("argument(s) seen as constants") == 3, proc.stdout
    out = tmp_path / "folded.pb"
    graft("apply", "-r", FOLD_RULES, path, "-o", out)
    folded = tf1.GraphDef.FromString(out.read_bytes())
    assert fused_batch_norms(folded) == {}
    original = text_format.Parse(open(path).read(), tf1.GraphDef())
    if ONEDNN_PASS:
        pytest.skip("the original frozen loop does not run with oneDNN on")
    for w, g in zip(run_frozen(original, FEEDS), run_frozen(folded, FEEDS)):
        assert np.abs(w - g).max() <= 1e-5 * np.abs(w).max()


def test_a_loop_carried_filter_stays_an_argument(tmp_path):
    """The body halves its filter each iteration: the filter enters as a
    constant but is never one inside the body, and nothing there changes."""
    path = repo_path("tests", "data", "tf_producers", "loop_carried.pbtxt")
    original = text_format.Parse(open(path).read(), tf1.GraphDef())
    folded, log = graft_apply(original, tmp_path, "loop_carried", "-r", FOLD_RULES)
    body = next(f for f in folded.library.function if f.signature.name.startswith("while_body"))
    conv = next(n for n in body.node_def if n.op == "Conv2D")
    assert conv.input[1] == "while_placeholder_1", conv
    x = np.random.default_rng(22).standard_normal((1, 4, 4, 3)).astype(np.float32)
    feeds = [{"x:0": x, "n:0": n} for n in (0, 2)]
    np.testing.assert_allclose(run_graph_with(folded, feeds), run_graph_with(original, feeds),
                               rtol=1e-6, atol=1e-6)


def test_folded_graph_runs_in_a_fresh_process_both_ways(model, tmp_path):
    """The folded graph imports and runs with oneDNN off and on, whatever
    this process chose."""
    original, want = model
    folded, _ = graft_apply(original, tmp_path, "fresh", "-r", FOLD_RULES)
    path = tmp_path / "folded.pb"
    path.write_bytes(folded.SerializeToString())
    np.save(tmp_path / "x.npy", X)
    script = (
        "import sys, numpy as np, tensorflow as tf\n"
        "tf1 = tf.compat.v1\n"
        "g = tf1.GraphDef.FromString(open(sys.argv[1], 'rb').read())\n"
        "graph = tf.Graph()\n"
        "with graph.as_default(): tf1.import_graph_def(g, name='')\n"
        "x = np.load(sys.argv[2])\n"
        "with tf1.Session(graph=graph) as s:\n"
        "    np.save(sys.argv[3], np.stack([s.run('out:0', {'x:0': x, 'flag:0': f, 'n:0': n})"
        " for f, n in %r]))\n" % (FEEDS,))
    for onednn in ("0", "1"):
        out = tmp_path / ("out%s.npy" % onednn)
        env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS=onednn, TF_CPP_MIN_LOG_LEVEL="3")
        proc = subprocess.run([sys.executable, "-c", script, str(path), str(tmp_path / "x.npy"), str(out)],
                              capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        for w, g in zip(want, np.load(out)):
            assert np.abs(w - g).max() <= 1e-5 * np.abs(w).max(), onednn


def test_python_explain_names_the_function():
    """graft.explain's entries say which library function holds a node."""
    sys.path.insert(0, repo_path("build", "python"))
    import graft  # pylint: disable=import-outside-toplevel
    path = repo_path("tests", "data", "tf_producers", "control_flow.pbtxt")
    explained = graft.explain(path, "fold_batch_norms", rule="fold_fused_batch_norm")
    where = sorted(e["function"].split("_")[0] + "_" + e["function"].split("_")[1]
                   for r in explained for e in r["at"] if e["matched"])
    assert where == ["cond_false", "cond_true", "while_body"], where
