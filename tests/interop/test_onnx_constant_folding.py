"""rules/onnx/constant_folding.graft: each op it folds, on constants that
exercise ONNX's semantics (integer Div and Cast truncate toward zero,
negative Gather indices, broadcasting, bool results, Reshape's 0 and -1,
reductions' axes and keepdims), gives what
onnxruntime computes for the same node."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from conftest import repo_path

RULES = repo_path("rules", "onnx", "constant_folding.graft")

f32 = np.float32
CASES = {
    "Div int64": ("Div", [np.array([-7, 7, -8], np.int64), np.array([2, -2, 3], np.int64)], {}),
    "Div float": ("Div", [np.array([1, -3], f32), np.array([[3], [7]], f32)], {}),
    "Cast float to int64": ("Cast", [np.array([-1.7, 2.5, -0.2, 3.99], f32)],
                            {"to": onnx.TensorProto.INT64}),
    "Cast int to bool": ("Cast", [np.array([0, 3, -1], np.int64)], {"to": onnx.TensorProto.BOOL}),
    "Cast int to float": ("Cast", [np.array([1, -2], np.int64)], {"to": onnx.TensorProto.FLOAT}),
    "Abs int64": ("Abs", [np.array([[-3, 0], [2, -1]], np.int64)], {}),
    "Log": ("Log", [np.array([0.5, 2.0, 8.0], f32)], {}),
    "Neg": ("Neg", [np.array([1.5, -2.0], f32)], {}),
    "Min broadcast": ("Min", [np.array([[1, 5], [7, 2]], np.int64), np.array([3], np.int64)], {}),
    "Max": ("Max", [np.array([1.0, -5.0], f32), np.array([0.5, -6.0], f32)], {}),
    "Pow": ("Pow", [np.array([2.0, 3.0], f32), np.array([3.0], f32)], {}),
    "Less": ("Less", [np.array([[1, 9], [4, 4]], np.int64), np.array([4], np.int64)], {}),
    "Equal": ("Equal", [np.array([1, 2], np.int64), np.array([1, 3], np.int64)], {}),
    "And": ("And", [np.array([True, False]), np.array([[True], [False]])], {}),
    "Not": ("Not", [np.array([True, False])], {}),
    "Where broadcast": ("Where", [np.array([[True], [False]]), np.array([1.0, 2.0], f32),
                                  np.array(-1.0, f32)], {}),
    "Gather negative index": ("Gather", [np.arange(12, dtype=f32).reshape(3, 4),
                                         np.array([[-1, 0], [1, -4]], np.int64)], {"axis": 1}),
    "Transpose": ("Transpose", [np.arange(24, dtype=np.int64).reshape(2, 3, 4)],
                  {"perm": [2, 0, 1]}),
    "Unsqueeze": ("Unsqueeze", [np.arange(6, dtype=f32).reshape(2, 3),
                                np.array([0, -1], np.int64)], {}),
    "Squeeze": ("Squeeze", [np.arange(3, dtype=f32).reshape(1, 3, 1),
                            np.array([2], np.int64)], {}),
    "Shape from start to end": ("Shape", [np.zeros((2, 3, 4, 5), f32)], {"start": 1, "end": -1}),
    "Reshape with 0 and -1": ("Reshape", [np.arange(24, dtype=f32).reshape(2, 3, 4),
                                          np.array([0, -1, 2], np.int64)], {}),
    "Concat axis 1": ("Concat", [np.arange(6, dtype=np.int64).reshape(2, 3),
                                 np.array([[7], [8]], np.int64)], {"axis": 1}),
    "ReduceProd of all": ("ReduceProd", [np.array([4, 16], np.int64)], {}),
    "ReduceSum axis 1, dims dropped": ("ReduceSum", [np.arange(24, dtype=f32).reshape(2, 3, 4),
                                                     np.array([1], np.int64)], {"keepdims": 0}),
    "ReduceMax axes attr": ("ReduceMax", [np.array([[3, -1], [2, 9]], np.int64)],
                            {"axes": [0, 1]}),
    "ReduceMin last axis": ("ReduceMin", [np.array([[3.5, -1.0], [2.0, 9.0]], f32)],
                            {"axes": [-1]}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_folded_as_onnxruntime_computes(graft, tmp_path, case):
    op, values, attrs = CASES[case]
    names = [f"c{i}" for i in range(len(values))]
    node = helper.make_node(op, names, ["y"], **attrs)
    initializers = [numpy_helper.from_array(v, n) for v, n in zip(values, names)]
    src, out = str(tmp_path / "m.onnx"), str(tmp_path / "folded.onnx")

    def save(output):
        graph = helper.make_graph([node], "fold", [], [output], initializers)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), src)
    save(helper.make_empty_tensor_value_info("y"))
    want = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, {})[0]
    save(helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(want.dtype),
                                       want.shape))
    graft("apply", "-r", RULES, src, "-o", out, "-q")
    folded = onnx.load(out)
    onnx.checker.check_model(folded, full_check=True)
    # the op is a constant now (read by the graph's output through an Identity)
    assert {n.op_type for n in folded.graph.node} <= {"Identity"}, case
    got = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {})[0]
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def test_a_large_result_stays_an_op(graft, tmp_path):
    """Folding never makes the model much larger: past 65536 elements the op stays."""
    a = np.ones((300, 1), f32)
    b = np.ones((1, 300), f32)
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "big", [],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT,
                                                             [300, 300])],
                              [numpy_helper.from_array(a, "a"), numpy_helper.from_array(b, "b")])
    src, out = str(tmp_path / "m.onnx"), str(tmp_path / "folded.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), src)
    graft("apply", "-r", RULES, src, "-o", out, "-q")
    assert [n.op_type for n in onnx.load(out).graph.node] == ["Add"]


def test_weights_that_cannot_fold_are_never_read(tmp_path):
    """A Gather of an embedding by the graph's token ids does not fold, and
    finding so does not read the embedding: a model whose embedding is 256
    MiB (2^26 values, as many as rules compute on; a sparse data file) folds
    in a fraction of that (it read and converted to doubles every weight a
    foldable op's first input held: 0.8 GiB on a 2 GiB LLaMA-like model)."""
    import subprocess
    from conftest import graft_binary
    rows, width = 1 << 20, 64  # 256 MiB of float32
    weight = onnx.TensorProto()
    weight.name, weight.data_type = "embedding", onnx.TensorProto.FLOAT
    weight.dims.extend([rows, width])
    weight.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", "m.onnx.data"), ("offset", "0"),
                       ("length", str(rows * width * 4))):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    with open(tmp_path / "m.onnx.data", "wb") as f:
        f.truncate(rows * width * 4)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["embedding", "ids"], ["y"])], "embed",
        [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [2, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 8, width])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              str(tmp_path / "m.onnx"))
    (tmp_path / "out").mkdir()
    rss = tmp_path / "rss"
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(rss), graft_binary(), "apply", "-r",
                    RULES, str(tmp_path / "m.onnx"), "-o", str(tmp_path / "out" / "m.onnx"),
                    "-q"], check=True)
    peak_kib = int(rss.read_text().split()[-1])
    assert peak_kib < 128 * 1024, peak_kib
    assert [n.op_type for n in onnx.load(str(tmp_path / "out" / "m.onnx"),
                                         load_external_data=False).graph.node] == ["Gather"]
