"""graft's Python face: the same results as the CLI, located errors, plain
reports, the GIL released, picklable models and rules."""
import pickle
import re
import subprocess
import threading
import time

import pytest

import graft
from conftest import repo_path

EXAMPLE = repo_path("examples", "keras_cnn.pb")
CLI = repo_path("bazel-bin", "cli", "graft")


def test_apply_gives_the_cli_bytes(tmp_path):
    out = tmp_path / "cli.pb"
    subprocess.run([CLI, "apply", "-q", "--pipeline",
                    repo_path("rules", "pipelines", "inference.yaml"), EXAMPLE,
                    "-o", str(out)], check=True)
    folded, report = graft.apply(graft.load(EXAMPLE), pipeline="inference")
    assert folded.to_bytes() == out.read_bytes()
    assert report["nodes_before"] == 68 and report["nodes_after"] == 63
    assert isinstance(report["rewrites"], int) and report["rewrites"] > 0
    # The same through a pipeline path, and written by the call.
    again, _ = graft.apply(EXAMPLE, repo_path("rules", "pipelines", "inference.yaml"),
                           output=tmp_path / "py.pb")
    assert (tmp_path / "py.pb").read_bytes() == out.read_bytes() == again.data


def test_rules_from_text(tmp_path):
    # The README's tutorial rule, as a notebook holds it: the same result
    # as the file through the CLI.
    tutorial = repo_path("examples", "fold_bn.graft")
    rules = graft.RuleSet.compile(text=open(tutorial).read(), name="notebook.graft")
    assert rules.num_rules == 2
    folded, report = graft.apply(EXAMPLE, rules)
    assert {r["name"]: r["applied"] for r in report["rules"]}["fold_bn"] > 0
    subprocess.run([CLI, "apply", "-q", "-r", tutorial, EXAMPLE, "-o",
                    str(tmp_path / "cli.pb")], check=True)
    assert folded.data == (tmp_path / "cli.pb").read_bytes()


def test_errors_are_located():
    bad = "rule r {\n  match { x = Relu(_) }\n  rewrite { replace x:0 with zz }\n}\n"
    with pytest.raises(graft.Error) as caught:
        graft.RuleSet.compile(text=bad, name="nb.graft")
    d = caught.value.diagnostics[0]
    assert (d.path, d.line) == ("nb.graft", 3) and "zz" in d.message
    assert "nb.graft:3:" in str(caught.value)
    with pytest.raises(graft.Error) as caught:
        graft.RuleSet.compile(repo_path("rules", "tf", "fold_batch_norms.graft"),
                              params={"no_such": 1})
    assert caught.value.usage
    with pytest.raises(graft.Error, match="upload.pb: error: not a valid binary GraphDef"):
        graft.load(b"\xff garbage", name="upload.pb")
    with pytest.raises(graft.Error, match="no_such.pb") as caught:
        graft.load("no_such.pb")
    # Errors survive pickling (process pools re-raise them).
    err = pickle.loads(pickle.dumps(caught.value))
    assert isinstance(err, graft.Error) and "no_such.pb" in str(err)


def test_shipped_libraries_by_name_old_and_new():
    # Grouped by dialect (rules/tf, rules/onnx); a bare name is TensorFlow's,
    # as before, and the packaged copy is the one found.
    by_name = {name: graft.RuleSet.compile(name) for name in
               ("fold_batch_norms", "tf/fold_batch_norms", "onnx/fold_batch_norms",
                "gtt/fold_constants", "onnxoptimizer/eliminate_identity")}
    assert by_name["fold_batch_norms"].num_rules == by_name["tf/fold_batch_norms"].num_rules
    assert by_name["onnx/fold_batch_norms"].num_rules != by_name["fold_batch_norms"].num_rules
    assert all(r.num_rules > 0 for r in by_name.values())
    with pytest.raises(graft.Error, match="cannot read the rule file"):
        graft.RuleSet.compile("no_such_library")


def test_a_failed_apply_writes_nothing(tmp_path):
    never = "rule grow {\n  match { r = Relu(x) }\n  rewrite { y = Relu(r) { T: r.T }\n    replace r:0 with y }\n}\n"
    with pytest.raises(graft.Error):
        graft.apply(EXAMPLE, graft.RuleSet.compile(text=never), output=tmp_path / "o.pb",
                    max_rewrites=50)
    assert not (tmp_path / "o.pb").exists()


def test_models_and_rules_pickle():
    model = graft.load(EXAMPLE)
    rules = graft.RuleSet.compile(pipeline="inference")
    model2, rules2 = pickle.loads(pickle.dumps((model, rules)))
    assert model2 == model and rules2.num_rules == rules.num_rules
    assert graft.apply(model2, rules2)[0] == graft.apply(model, rules)[0]


def test_every_subcommand(tmp_path):
    model = graft.load(EXAMPLE)
    folded, _ = graft.apply(model, pipeline="inference")
    d = graft.diff(model, folded)
    assert d.differs and "FusedBatchNorm" in d
    assert not graft.diff(model, model).differs
    assert graft.validate(folded) == {"path": EXAMPLE, "valid": True, "problems": [],
                                      "nodes": 63}
    assert graft.mem(model, batch=8)["devices"][0]["peak_bytes"] > \
        graft.mem(model, batch=1)["devices"][0]["peak_bytes"]
    assert graft.cost(model, batch=1)["flops"] > 0
    explained = graft.explain(model, repo_path("rules", "tf", "fold_batch_norms.graft"),
                              rule="fold_fused_batch_norm")
    assert len(explained) == 1 and len(explained[0]["at"]) == 4
    assert all(e["matched"] for e in explained[0]["at"])
    tests = graft.test(repo_path("rules", "tf", "fold_batch_norms.graft"))
    assert tests and all(t["passed"] for t in tests)
    assert all(f["diff"] == "" for f in graft.fmt(repo_path("rules")))
    p = graft.pipeline_from_transforms("fold_constants strip_unused_nodes",
                                       inputs="x", outputs=["y"])
    assert p["steps"] == 2 and "fold_constants" in p["yaml"]
    review = graft.review(repo_path("rules", "tf", "fold_batch_norms.graft"),
                          repo_path("rules", "pipelines", "inference.yaml"), [EXAMPLE])
    assert review["failed"] == 0 and len(review["models"]) == 1
    # quantization adds fake-quant ops: the comment leads with them
    comment = graft.review(repo_path("rules", "tf", "fold_batch_norms.graft"),
                           repo_path("rules", "pipelines", "inference.yaml"), [EXAMPLE],
                           format="markdown", full=True)["text"]
    assert re.search(r"\| [^|]*FakeQuantWithMinMaxVars \+10\b", comment), comment
    assert "<details>" in comment and review["models"][0]["ops_head"]["FakeQuantWithMinMaxVars"] > 0
    folded.save(tmp_path / "f.pbtxt")
    text = graft.load(tmp_path / "f.pbtxt")
    assert text.format == "pbtxt" and not graft.diff(text.as_format("pb"), folded).differs
    assert "graft 0.1.0" in graft.version()


def _chain(n):
    """A text GraphDef: a Placeholder and n Relu nodes in a chain."""
    nodes = ['node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }']
    prev = "x"
    for i in range(n):
        nodes.append('node { name: "r%d" op: "Relu" input: "%s" attr { key: "T" value { type: DT_FLOAT } } }' % (i, prev))
        prev = "r%d" % i
    return graft.Model("\n".join(nodes).encode(), "pbtxt", "chain")


def test_the_gil_is_released_while_graft_works():
    model = _chain(60000)
    rules = graft.RuleSet.compile(repo_path("rules", "tf", "fold_batch_norms.graft"))
    spans = []

    def work():
        start = time.perf_counter()
        graft.apply(model, rules)
        spans.append((start, time.perf_counter()))

    threads = [threading.Thread(target=work) for _ in range(2)]
    ticks = 0
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        ticks += 1  # Python runs while both calls are in C++
        time.sleep(0.001)
    for t in threads:
        t.join()
    (a0, a1), (b0, b1) = spans
    overlap = min(a1, b1) - max(a0, b0)
    assert overlap > 0.5 * min(a1 - a0, b1 - b0), spans
    assert ticks > 20


def test_saved_models(tmp_path):
    saved = repo_path("tests", "data", "saved_models", "cnn")
    model = graft.load(saved)
    assert model.format == "saved_model" and model.stats()["format"] == "saved_model"
    with pytest.raises(graft.Error, match="written as a folder"):
        graft.apply(model, pipeline="inference", saved_model="in-place")
    out, report = graft.apply(model, pipeline="inference", output=tmp_path / "q",
                              saved_model="in-place")
    assert out.format == "saved_model" and (tmp_path / "q" / "saved_model.pb").exists()
    changed = {f["name"] for f in report["functions"] if f.get("rewrites", 0) > 0}
    assert any("wrapped_model" in name for name in changed)
    assert not any("traced" in name for name in changed)
    d = graft.diff(model, out)
    assert d.differs and "function __inference__wrapped_model" in d
    model.save(tmp_path / "copy")
    assert not graft.diff(model, graft.load(tmp_path / "copy")).differs


def test_saved_models_frozen(tmp_path):
    saved = repo_path("tests", "data", "saved_models", "cnn")
    # Applied frozen (the default): a GraphDef, the batch norm folded.
    folded, report = graft.apply(graft.load(saved), repo_path("rules", "tf", "fold_batch_norms.graft"))
    assert folded.format == "pb" and report["freeze"]["variables"] == 8
    ops = folded.stats()["ops"]
    assert "FusedBatchNormV3" not in ops and "VarHandleOp" not in ops
    # ... or a SavedModel folder without variables.
    out, _ = graft.apply(saved, repo_path("rules", "tf", "fold_batch_norms.graft"),
                         output=tmp_path / "f")
    assert out.format == "saved_model" and not (tmp_path / "f" / "variables").exists()
    # Frozen on load: the signature's tensors become the Model's.
    frozen = graft.load(saved, freeze=True)
    assert frozen.inputs == ["serving_default_input_1:0"]
    assert frozen.outputs == ["StatefulPartitionedCall:0"]
    with pytest.raises(graft.Error, match="no signature `predict`"):
        graft.load(saved, freeze=True, signature="predict")
    with pytest.raises(graft.Error, match="pass freeze=True"):
        graft.load(saved, signature="serving_default")
    # A frozen GraphDef saved as a SavedModel, and read back.
    frozen.save(tmp_path / "again", format="saved_model")
    again = graft.load(tmp_path / "again", freeze=True)
    assert again.inputs == frozen.inputs and again.outputs == frozen.outputs
    # The same graph, less the init op's NoOp (the new SavedModel has none).
    assert str(graft.diff(frozen, again)) == "- NoOp (NoOp)\n0 added, 1 removed, 0 changed\n"
    with pytest.raises(graft.Error, match="needs the model's inputs and outputs"):
        graft.Model(frozen.data).save(tmp_path / "x", format="saved_model")


def test_every_int64_report_field_becomes_an_int():
    import re
    proto = open(repo_path("proto", "report.proto")).read()
    fields = set(re.findall(r"\bu?int64 (\w+) =", proto))
    assert fields and fields <= graft._INT64_FIELDS, fields - graft._INT64_FIELDS


def test_onnx_models(tmp_path):
    src = repo_path("tests", "data", "onnx", "conv_bn.onnx")
    model = graft.load(src)
    assert model.format == "onnx"
    folded, report = graft.apply(model, repo_path("rules", "onnx", "fold_batch_norms.graft"))
    assert folded.format == "onnx" and report["rewrites"] == 1
    ops = {o["name"] for o in folded.stats()["ops"]}
    assert "BatchNormalization" not in ops and "Conv" in ops
    folded.save(tmp_path / "f.onnx")
    assert graft.load(tmp_path / "f.onnx") == folded
    assert graft.diff(model, folded).differs
    with pytest.raises(graft.Error, match="its rules are for tensorflow graphs"):
        graft.apply(model, repo_path("rules", "tf", "fold_batch_norms.graft"))


def test_onnxoptimizer_passes(tmp_path):
    """onnxoptimizer's pass names, as the CLI's --onnxoptimizer-passes."""
    model = graft.load(repo_path("tests", "data", "onnx", "conv_bn.onnx"))
    out, report = graft.apply(model, onnxoptimizer_passes="eliminate_identity,fuse_bn_into_conv")
    assert report["rewrites"] == 1
    assert "BatchNormalization" not in {o["name"] for o in out.stats()["ops"]}
    with pytest.raises(graft.Error, match="eliminate_identity"):  # lists the known ones
        graft.RuleSet.compile(onnxoptimizer_passes="eliminate_nothing")
    rules = graft.RuleSet.compile(onnxoptimizer_passes="eliminate_identity,fuse_bn_into_conv")
    assert pickle.loads(pickle.dumps(rules)).num_rules == rules.num_rules


def test_partition_plans_a_joint_graph():
    # x -> mm = x w -> relu; the backward (from the tangent t) reads both.
    def node(name, op, inputs=(), shape=None):
        attrs = 'attr { key: "T" value { type: DT_FLOAT } }' if op != "Placeholder" else (
            'attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "shape" value { shape { '
            + " ".join("dim { size: %d }" % d for d in shape) + " } } }")
        return 'node { name: "%s" op: "%s" %s %s }' % (
            name, op, " ".join('input: "%s"' % i for i in inputs), attrs)
    text = "\n".join([
        node("x", "Placeholder", shape=(64, 64)), node("w", "Placeholder", shape=(64, 64)),
        node("mm", "MatMul", ("x", "w")), node("relu", "Relu", ("mm",)),
        node("t", "Placeholder", shape=(64, 64)), node("g1", "Mul", ("t", "relu")),
        node("g2", "Mul", ("g1", "mm"))])
    model = graft.Model(text.encode(), "pbtxt", "joint")
    plan = graft.partition(model, backward_inputs=["t"], budget=1.0)
    # relu costs no matrix FLOPs: recomputed from mm rather than saved
    assert plan["saved"] == ["mm:0"] and plan["recomputed"] == ["relu"]
    assert plan["default_bytes"] == 2 * 64 * 64 * 4 and plan["saved_bytes"] == 64 * 64 * 4
    least = graft.partition(model, backward_inputs=["t"], budget=0.0)
    assert least["saved_bytes"] == 0 and least["budget_met"]
    assert least["recomputed_flops"] == 2 * 64 ** 3
    pinned = graft.partition(model, backward_inputs=["t"], pinned=["mm"], budget=0.0)
    assert not pinned["budget_met"] and pinned["least_bytes"] == 64 * 64 * 4
    with pytest.raises(graft.Error, match="backward's inputs"):
        graft.partition(model, backward_inputs=["nothing"])
