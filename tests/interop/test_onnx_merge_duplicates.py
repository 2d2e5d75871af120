"""rules/onnx/merge_duplicates.graft (common subexpression elimination):
what it merges computes the same in onnxruntime, and what could differ
stays apart: random ops, control flow whose bodies differ, nodes whose
attrs or constants' bytes differ, nodes whose attributes graft keeps
only in their message (sparse constants). Graph outputs keep their
names."""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from conftest import repo_path

RULES = repo_path("rules", "onnx", "merge_duplicates.graft")


def branch(name, value):
    """A body that gives the constant `value`."""
    out = helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, [3])
    c = helper.make_node("Constant", [], [f"{name}_y"],
                         value=numpy_helper.from_array(np.full(3, value, np.float32)))
    return helper.make_graph([c], name, [], [out])


def sparse(values):
    """A sparse [3] float tensor: `values` at its first indices."""
    v = numpy_helper.from_array(np.array(values, np.float32), "")
    i = numpy_helper.from_array(np.arange(len(values), dtype=np.int64), "")
    return helper.make_sparse_tensor(v, i, [3])


def model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    same = [numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), n)
            for n in ("w1", "w2")]  # equal bytes: one initializer
    other = numpy_helper.from_array(np.array([1.0, 2.0, 4.0], np.float32), "w3")
    nodes = [
        helper.make_node("Add", ["x", "w1"], ["a1"]),
        helper.make_node("Add", ["x", "w2"], ["a2"]),  # = a1 once w2 is w1
        helper.make_node("Add", ["x", "w3"], ["a3"]),  # other bytes
        helper.make_node("Softmax", ["a1"], ["s1"], axis=0),
        helper.make_node("Softmax", ["a2"], ["s2"], axis=0),  # = s1
        helper.make_node("LogSoftmax", ["a1"], ["l1"], axis=0),  # other op
        helper.make_node("RandomUniformLike", ["x"], ["r1"], seed=1.0),
        helper.make_node("RandomUniformLike", ["x"], ["r2"], seed=1.0),  # random: apart
        helper.make_node("If", ["cond"], ["i1"], then_branch=branch("t1", 1.0),
                         else_branch=branch("e1", 2.0)),
        helper.make_node("If", ["cond"], ["i2"], then_branch=branch("t2", 5.0),
                         else_branch=branch("e2", 6.0)),  # other bodies: apart
        helper.make_node("Mul", ["r1", "r2"], ["r"]),
        helper.make_node("Sub", ["i1", "i2"], ["i"]),
        # sparse constants (graft keeps them in the node's message, not as
        # attrs): other values, apart
        helper.make_node("Constant", [], ["c1"], sparse_value=sparse([0.5])),
        helper.make_node("Constant", [], ["c2"], sparse_value=sparse([-2.0])),
        helper.make_node("Sub", ["c1", "c2"], ["c"]),
        helper.make_node("Sum", ["s2", "a3", "l1", "i", "c"], ["z"]),
    ]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3])
               for n in ("s1", "s2", "z", "r")]
    graph = helper.make_graph(nodes, "cse", [x, cond], outputs, same + [other])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_merged_compute_the_same_and_what_may_differ_stays(graft, tmp_path):
    src, out = str(tmp_path / "m.onnx"), str(tmp_path / "merged.onnx")
    onnx.save(model(), src)
    before = open(src, "rb").read()
    graft("apply", "-r", RULES, src, "-o", out, "-q")
    assert open(src, "rb").read() == before
    merged = onnx.load(out)
    onnx.checker.check_model(merged, full_check=True)
    ops = [n.op_type for n in merged.graph.node]
    # w1 and w2 merged, then the Adds and the Softmaxes reading them; the
    # outputs s1 and s2 are one tensor, the second written as an Identity
    assert len(merged.graph.initializer) == 2
    assert "w3" in {i.name for i in merged.graph.initializer}
    assert ops.count("Add") == 2 and ops.count("Softmax") == 1
    assert ops.count("RandomUniformLike") == 2 and ops.count("If") == 2
    assert ops.count("LogSoftmax") == 1 and ops.count("Constant") == 2
    assert [o.name for o in merged.graph.output] == ["s1", "s2", "z", "r"]
    sessions = [ort.InferenceSession(p, providers=["CPUExecutionProvider"]) for p in (src, out)]
    feeds = {"x": np.array([0.5, -1.0, 2.0], np.float32)}
    for c in (True, False):
        feeds["cond"] = np.array(c)
        want, got = (s.run(["s1", "s2", "z"], feeds) for s in sessions)
        for w, g in zip(want, got):
            np.testing.assert_array_equal(w, g)
