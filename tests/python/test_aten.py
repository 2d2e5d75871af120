"""The aten dialect from Python: torch.export's graphs (tests/data/aten,
made by make_aten_graphs.py, which also checks the folded graphs in torch)
fold through graft.apply, and graft.aten reads graft's output back in
order. torch itself is not needed here."""
import graft
from graft import aten
from conftest import repo_path

CONV_BN = repo_path("tests", "data", "aten", "conv_bn.aten.pbtxt")
DECOMPOSED = repo_path("tests", "data", "aten", "conv_bn_decomposed.aten.pbtxt")
FOLD = repo_path("rules", "aten", "fold_batch_norms.graft")


def ops_of(text):
    return [n["op"][0].decode() for n in aten.parse_text_proto(text)["node"]]


def test_both_export_forms_fold(tmp_path):
    for model, bn in ((CONV_BN, "aten.batch_norm.default"),
                      (DECOMPOSED, "aten._native_batch_norm_legit_no_training.default")):
        before = ops_of(open(model).read())
        out = tmp_path / "folded.aten.pbtxt"
        _, report = graft.apply(model, graft.RuleSet.compile(FOLD), output=out)
        assert report["rewrites"] == 3
        after = ops_of(out.read_text())
        assert before.count(bn) == 3 and after.count(bn) == 0
        # The batch norms' parameters went with them; the convs took new ones.
        assert after.count("Const") < before.count("Const")


def test_read_back_in_dependency_order(tmp_path):
    out = tmp_path / "folded.aten.pbtxt"
    graft.apply(CONV_BN, graft.RuleSet.compile(FOLD), output=out)
    nodes = aten._topological(aten.parse_text_proto(out.read_text())["node"])
    seen = set()
    for n in nodes:
        for i in n.get("input", []):
            assert i.decode().partition(":")[0] in seen, n["name"]
        seen.add(n["name"][0].decode())
    # The folded convs kept the batch norms' names, and their tensors read back.
    convs = [n for n in nodes if n["op"][0] == b"aten.conv2d.default"]
    assert sorted(n["name"][0] for n in convs) == [b"batch_norm", b"batch_norm_1", b"batch_norm_2"]
    weights = {n["name"][0]: n for n in nodes}[convs[0]["input"][1]]
    tensor = weights["attr"][[a["key"][0] for a in weights["attr"]].index(b"value")]
    content = tensor["value"][0]["tensor"][0]["tensor_content"][0]
    assert len(content) == 4 * 3 * 3 * 3 * 4  # float32 [4, 3, 3, 3]
