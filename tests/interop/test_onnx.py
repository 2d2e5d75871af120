"""ONNX models through graft, checked by onnx.checker (full check) and run
in onnxruntime: an unmodified round trip writes the same bytes and
computes the same outputs; rules/onnx/fold_batch_norms.graft folds every
batch norm that follows a Conv or Gemm into new initializers, outputs
within 1e-5 of the original's largest."""
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from conftest import module_folder, numbers_report, repo_path
from onnx_zoo import MODELS, assert_shapes_agree, example_input, make

FOLD = repo_path("rules", "onnx", "fold_batch_norms.graft")


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    with module_folder(tmp_path_factory, "zoo") as out:
        yield {name: make(name, str(out)) for name in MODELS}


@pytest.fixture(scope="module")
def numbers():
    yield from numbers_report(
        "onnx_fold.txt",
        "model: batch norms before -> after, nodes before -> after, max |diff| / max |output|")


def run(path, feed):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {feed[0]: feed[1]})


def ops(path):
    return [n.op_type for n in onnx.load(path).graph.node]


@pytest.mark.parametrize("name", MODELS)
def test_round_trip(graft, zoo, tmp_path, name):
    src = zoo[name]
    out = str(tmp_path / "copy.onnx")
    graft("convert", src, out)
    onnx.checker.check_model(onnx.load(out), full_check=True)
    with open(src, "rb") as a, open(out, "rb") as b:
        assert a.read() == b.read()  # every node and initializer as it was
    feed = example_input(src)
    for want, got in zip(run(src, feed), run(out, feed)):
        assert np.array_equal(want, got)


@pytest.mark.parametrize("name", ["resnet50", "densenet121", "inception_v2", "shufflenet"])
def test_fold_batch_norms(graft, zoo, tmp_path, name, numbers):
    src = zoo[name]
    out = str(tmp_path / "folded.onnx")
    proc = graft("apply", "-r", FOLD, src, "-o", out)
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    before, after = ops(src), ops(out)
    # Every batch norm after a Conv goes; densenet's pre-activation ones
    # (after a Concat or a pool) stay.
    producers = {o: n for n in model.graph.node for o in n.output}
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            assert producers[node.input[0]].op_type not in ("Conv", "Gemm"), node.name
    assert after.count("BatchNormalization") < before.count("BatchNormalization")
    assert "Sqrt" not in after and "Div" not in after  # folded, not deferred
    feed = example_input(src)
    (want,), (got,) = run(src, feed), run(out, feed)
    rel = np.abs(want - got).max() / np.abs(want).max()
    assert rel <= 1e-5, rel
    numbers.append("%s: %d -> %d, %d -> %d, %.1e" % (
        name, before.count("BatchNormalization"), after.count("BatchNormalization"),
        len(before), len(after), rel))
    assert "fold_conv_batch_norm" in proc.stderr


def test_fold_inside_an_opset_15_model_with_gemm(graft, tmp_path):
    """A Gemm (transB) and a Conv with a bias, BatchNormalization-15."""
    from onnx import helper, numpy_helper, TensorProto
    rng = np.random.default_rng(0)
    init = lambda name, a: numpy_helper.from_array(a.astype(np.float32), name)  # noqa: E731
    bn = lambda p, c: [init(p + k, rng.uniform(lo, hi, c)) for k, (lo, hi) in  # noqa: E731
                       zip(("_s", "_b", "_m", "_v"), [(0.5, 1.5), (-.5, .5), (-.5, .5), (.5, 2)])]
    nodes = [
        helper.make_node("Conv", ["x", "w", "c"], ["y"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["y", "bn1_s", "bn1_b", "bn1_m", "bn1_v"],
                         ["z"], name="bn1", epsilon=1e-3),
        helper.make_node("Relu", ["z"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("Gemm", ["f", "g"], ["h"], name="gemm", transB=1),
        helper.make_node("BatchNormalization", ["h", "bn2_s", "bn2_b", "bn2_m", "bn2_v"],
                         ["out"], name="bn2"),
    ]
    inits = [init("w", rng.standard_normal((4, 3, 3, 3)) * 0.3), init("c", rng.standard_normal(4)),
             init("g", rng.standard_normal((5, 4 * 6 * 6)) * 0.1)] + bn("bn1", 4) + bn("bn2", 5)
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 6, 6])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    src, out = str(tmp_path / "m.onnx"), str(tmp_path / "f.onnx")
    onnx.save(model, src)
    graft("apply", "-r", FOLD, src, "-o", out)
    folded = onnx.load(out)
    onnx.checker.check_model(folded, full_check=True)
    assert [n.op_type for n in folded.graph.node] == ["Conv", "Relu", "Flatten", "Gemm"]
    assert [o.name for o in folded.graph.output] == ["out"]
    feed = ("x", rng.standard_normal((2, 3, 6, 6)).astype(np.float32))
    (want,), (got,) = run(src, feed), run(out, feed)
    assert np.abs(want - got).max() <= 1e-5 * np.abs(want).max()


FOLD_CASES = ["conv", "conv_transpose", "gemm", "gemm_bias", "matmul", "matmul_add"]


@pytest.mark.parametrize("case", FOLD_CASES)
def test_fold_cases_compute_the_same(graft, tmp_path, case):
    """Each folding test block's input, folded, computes what it did in
    onnxruntime (the test blocks count ops; this checks the numbers)."""
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / "out.onnx")
    graft("convert", repo_path("tests", "data", "onnx", f"fold_{case}.onnxtxt"), src)
    graft("apply", "-r", FOLD, src, "-o", out)
    assert "BatchNormalization" not in ops(out)
    onnx.checker.check_model(onnx.load(out), full_check=True)
    shape = [d.dim_value for d in onnx.load(src).graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    want, got = run(src, ("x", x))[0], run(out, ("x", x))[0]
    assert np.abs(want - got).max() <= 1e-5 * max(1.0, np.abs(want).max())


def all_ops(graph):
    """Op types of `graph` and of its subgraphs, nested ones too."""
    for n in graph.node:
        yield n.op_type
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield from all_ops(g)


def test_fold_inside_subgraphs(graft, tmp_path):
    """Batch norms in an If's branch (weights read from the outer graph)
    and in a Loop body nested in the other branch fold, each body its own
    fixpoint; outputs equal in onnxruntime on both branches."""
    src = repo_path("tests", "data", "onnx", "subgraph_bn.onnx")
    out = str(tmp_path / "out.onnx")
    proc = graft("apply", "-r", FOLD, src, "-o", out)
    assert "subgraph if/then_branch: 1 rewrite(s)" in proc.stderr
    assert "subgraph if/else_branch/loop/body: 1 rewrite(s)" in proc.stderr
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    assert "BatchNormalization" in list(all_ops(onnx.load(src).graph))
    assert "BatchNormalization" not in list(all_ops(model.graph))
    # The outer weight only the branch read is gone with the fold.
    assert "w_shared" not in [t.name for t in model.graph.initializer]
    x = np.random.default_rng(0).standard_normal((1, 3, 6, 6)).astype(np.float32)
    for c in (True, False):
        feed = {"x": x, "c": np.array(c)}
        want = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, feed)[0]
        got = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, feed)[0]
        assert np.abs(want - got).max() <= 1e-5 * np.abs(want).max(), c
    # Only the outer graph: the bodies keep theirs.
    graft("apply", "-r", FOLD, src, "-o", out, "--functions", "none")
    assert list(all_ops(onnx.load(out).graph)).count("BatchNormalization") == 2


def test_commands_on_onnx(graft, zoo, tmp_path):
    src = zoo["resnet50"]
    assert "Conv" in graft("stats", src).stdout
    graft("validate", src)
    folded = str(tmp_path / "f.onnx")
    graft("apply", "-q", "-r", FOLD, src, "-o", folded)
    diff = graft("diff", src, folded).stdout
    assert "BatchNormalization -> Conv" in diff or "op: BatchNormalization -> Conv" in diff
    explained = graft("explain", "-r", FOLD, src, "--rule", "fold_conv_batch_norm").stderr \
        + graft("explain", "-r", FOLD, src, "--rule", "fold_conv_batch_norm").stdout
    assert "matches" in explained
    # TensorFlow rules on an ONNX model, and the other way round, are refused.
    bad = graft("apply", "-r", repo_path("rules", "tf", "fold_batch_norms.graft"), src, "-o",
                str(tmp_path / "x.onnx"), check=False)
    assert bad.returncode == 1 and "tensorflow" in bad.stderr and "onnx" in bad.stderr
    assert not os.path.exists(tmp_path / "x.onnx")


def test_other_exporters_models_round_trip(graft, tmp_path):
    """Models graft did not make (the onnx wheel's PyTorch- and hand-made
    backend test models, unnamed nodes among them) come back byte for
    byte."""
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    paths = [os.path.join(d, f) for d, _, files in os.walk(root) for f in files
             if f.endswith(".onnx") and "light" not in d]
    assert len(paths) > 100
    out = str(tmp_path / "copy.onnx")
    for path in paths:
        graft("convert", path, out)
        with open(path, "rb") as a, open(out, "rb") as b:
            assert a.read() == b.read(), path


def test_external_data(graft, zoo, tmp_path):
    """resnet50 with its weights in an external file: converted to another
    folder, the model and its data file come back byte for byte and compute
    the same; folded, the new weights go to the output's own data file and
    the original's is left as it was."""
    src_dir, out_dir = tmp_path / "src", tmp_path / "out"
    src_dir.mkdir()
    out_dir.mkdir()
    src = str(src_dir / "m.onnx")
    onnx.save_model(onnx.load(zoo["resnet50"]), src, save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=1024)
    data = (src_dir / "weights.bin").read_bytes()
    assert len(data) > 50 << 20
    feed = example_input(zoo["resnet50"])
    want = run(src, feed)

    copy = str(out_dir / "copy.onnx")
    graft("convert", src, copy)
    assert (out_dir / "copy.onnx").read_bytes() == (src_dir / "m.onnx").read_bytes()
    assert (out_dir / "weights.bin").read_bytes() == data
    for a, b in zip(want, run(copy, feed)):
        assert np.array_equal(a, b)

    folded = str(out_dir / "folded.onnx")
    graft("apply", "-q", "-r", FOLD, src, "-o", folded)
    onnx.checker.check_model(folded, full_check=True)
    assert "BatchNormalization" not in ops(folded)
    new_data = out_dir / "folded.onnx.data"
    assert new_data.stat().st_size > 10 << 20  # the folded filters
    assert os.path.getsize(folded) < 1 << 20
    (got,) = run(folded, feed)
    assert np.abs(want[0] - got).max() <= 1e-5 * np.abs(want[0]).max()
    # Beside the original: it refers to the original's file, which stays.
    beside = str(src_dir / "folded.onnx")
    graft("apply", "-q", "-r", FOLD, src, "-o", beside)
    assert (src_dir / "weights.bin").read_bytes() == data
    (got,) = run(beside, feed)
    assert np.abs(want[0] - got).max() <= 1e-5 * np.abs(want[0]).max()


def test_external_data_benchmark_sampled():
    """bench_onnx_external.py (2.5 GiB in docs/benchmarks.md) on a 48 MiB
    model: copies byte-identical, the fold's outputs equal in onnxruntime."""
    from bench_onnx_external import measure
    r = measure(0.05, width=512, run=True, peers=False)
    assert r["copy_identical"] and r["original_untouched"]
    assert r["batch_norms_left"] == 0 and r["fold_data_mib"] >= 1
    assert r["max_rel_diff"] <= 1e-5


def test_text_form_round_trip(graft, zoo, tmp_path):
    """A zoo model through the text form (`.onnxtxt`) and back: the same
    bytes."""
    src = zoo["shufflenet"]
    text, back = str(tmp_path / "m.onnxtxt"), str(tmp_path / "back.onnx")
    graft("convert", src, text)
    assert open(text).read().startswith("ir_version:")
    graft("convert", text, back)
    with open(src, "rb") as a, open(back, "rb") as b:
        assert a.read() == b.read()


@pytest.mark.parametrize("name", ["resnet50", "inception_v2", "shufflenet", "densenet121"])
def test_shapes_agree_with_onnx_shape_inference(graft, zoo, name):
    """`graft mem` on ONNX knows every tensor's shape in these models, and
    each equals onnx.shape_inference's where that knows it; `graft cost`
    counts the convolutions' and Gemm's FLOPs."""
    src = zoo[name]
    assert_shapes_agree(graft, src)
    cost = graft("cost", src).stdout
    gflop = float(cost.strip().splitlines()[-1].split(",")[1].split()[0])
    assert gflop > 0.1, cost[-300:]  # ResNet50: 8.3 GFLOP at batch 1
