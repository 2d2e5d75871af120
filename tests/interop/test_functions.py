"""Rules inside library functions: batch norms inside a tf.while_loop body,
a tf.cond branch and a nested tf.function's call target are folded where
they are; TensorFlow runs the rewritten graph to the same numbers, with
the functions' signatures unchanged. `--functions` chooses which."""
import numpy as np
import pytest
import tensorflow as tf

from conftest import run_graph
from models import FOLD_RULES, graft_apply

RNG = np.random.default_rng(0)


def bn_params(channels):
    return [RNG.uniform(0.5, 1.5, channels).astype(np.float32),
            RNG.uniform(-0.5, 0.5, channels).astype(np.float32),
            RNG.uniform(-0.5, 0.5, channels).astype(np.float32),
            RNG.uniform(0.5, 2.0, channels).astype(np.float32)]


def block(x, w, p):
    y = tf.nn.conv2d(x, w, 1, "SAME")
    y, _, _ = tf.compat.v1.nn.fused_batch_norm(y, *p, epsilon=1e-3, is_training=False)
    return tf.nn.relu(y)


def control_flow_graph():
    """A loop body, a branch and a called function, each with a conv and a
    batch norm whose constants live inside the function."""
    params = [(RNG.standard_normal((3, 3, 4, 4)).astype(np.float32) * 0.3, bn_params(4))
              for _ in range(3)]

    @tf.function
    def called(x):
        return block(x, *params[2])

    @tf.function
    def f(x, flag):
        def body(i, x):
            return i + 1, block(x, *params[0])
        _, y = tf.while_loop(lambda i, x: i < 3, body, [0, x])
        y = tf.cond(flag, lambda: block(y, *params[1]), lambda: y * 2.0)
        return tf.identity(called(y), name="out")

    concrete = f.get_concrete_function(tf.TensorSpec([2, 8, 8, 4], tf.float32, name="x"),
                                       tf.TensorSpec([], tf.bool, name="flag"))
    return concrete.graph.as_graph_def()


def batch_norms(graph_def):
    return {f.signature.name: sum(n.op.startswith("FusedBatchNorm") for n in f.node_def)
            for f in graph_def.library.function
            if any(n.op.startswith("FusedBatchNorm") for n in f.node_def)}


def test_folds_inside_loop_branch_and_call(tmp_path):
    original = control_flow_graph()
    before = batch_norms(original)
    assert len(before) == 3 and all(before.values()), before
    folded, log = graft_apply(original, tmp_path, "control_flow", "-r", FOLD_RULES)
    assert batch_norms(folded) == {}, log
    assert "fold_fused_batch_norm: 3 applied" in log, log
    # Signatures unchanged; the top-level graph's nodes untouched.
    sig = {f.signature.name: f.signature for f in original.library.function}
    for f in folded.library.function:
        assert f.signature == sig[f.signature.name]
    assert [n for n in folded.node] == [n for n in original.node]
    x = RNG.standard_normal((2, 8, 8, 4)).astype(np.float32)
    for flag in (True, False):
        want = run_graph(original, {"x:0": x, "flag:0": flag}, "out:0")
        got = run_graph(folded, {"x:0": x, "flag:0": flag}, "out:0")
        assert np.abs(want - got).max() <= 1e-5 * np.abs(want).max()


def test_functions_flag_chooses(tmp_path):
    original = control_flow_graph()
    loop = next(f.signature.name for f in original.library.function
                if f.signature.name.startswith("while_body"))
    only, _ = graft_apply(original, tmp_path, "only", "-r", FOLD_RULES, "--functions", loop)
    left = batch_norms(only)
    assert loop not in left and len(left) == 2, left
    graft_apply(original, tmp_path, "none", "-r", FOLD_RULES, "--functions", "none")
    # Nothing to do: the input's bytes, as they were.
    assert (tmp_path / "none.out.pb").read_bytes() == (tmp_path / "none.pb").read_bytes()


@pytest.mark.parametrize("name", ["nosuch_fn"])
def test_unknown_function_is_an_error(tmp_path, graft, name):
    src = tmp_path / "cf.pb"
    src.write_bytes(control_flow_graph().SerializeToString())
    proc = graft("apply", "-r", FOLD_RULES, src, "-o", tmp_path / "out.pb",
                 "--functions", name, check=False)
    assert proc.returncode == 1 and f"`{name}`" in proc.stderr
    assert not (tmp_path / "out.pb").exists()
