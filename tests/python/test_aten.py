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


# Pieces of a quoted string: plain text, every escape protobuf's text format
# has (octal past \377 and a \u surrogate pair among them) and backslashes
# that start none.
PIECES = ["a", "é", " ", "'", "0", "7", "x", "g", "\\\\", "\\n", "\\t", "\\r", "\\a", "\\b",
          "\\f", "\\v", "\\?", "\\'", '\\"', "\\0", "\\7", "\\12", "\\377", "\\400", "\\777",
          "\\x4", "\\x41", "\\xfF", "\\u00e9", "\\ud83d\\ude00", "\\ud83d", "\\U0001F600",
          "\\q", "\\8", "\\x", "\\u12", "\\"]


def graph_of_strings(strings):
    return "".join('node { name: "n%d" op: "Const" attr { key: "s" value { s: "%s" } } }\n'
                   % (i, s) for i, s in enumerate(strings))


def test_strings_read_as_the_cpp_reader_reads_them():
    import random
    rng = random.Random(7)
    strings = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6))) for _ in range(400)]
    for s in strings:
        text = graph_of_strings([s])
        try:
            cpp = aten._decode(memoryview(graft.load(text.encode(), format="pbtxt")
                                          .as_format("pb").to_bytes()), "GraphDef")
        except graft.Error:
            cpp = None
        try:
            py = aten.parse_text_proto(text)
        except ValueError as e:
            # Refused where protobuf refuses; an escape at its backslash.
            assert cpp is None, (s, str(e))
            if "`\\" in str(e):
                column = int(str(e).split("column ")[1].split(":")[0])
                assert text[column - 1] == "\\", (s, str(e))
            continue
        assert cpp is not None, s
        assert py["node"][0]["attr"] == cpp["node"][0]["attr"], s


def test_escape_errors_are_located():
    text = graph_of_strings(["ok", "é\\qé"])
    try:
        aten.parse_text_proto(text)
    except ValueError as e:
        column = text.split("\n")[1].index("\\q") + 1
        assert str(e) == ("graft.aten: line 2, column %d: "
                          "`\\q` is no escape protobuf's text format has" % column), str(e)
    else:
        raise AssertionError("an unknown escape was read")
    for s, what in (("\\777", b"\xff"), ("\\x41g", b"Ag"), ("\\ud83d\\ude00", "😀".encode())):
        assert aten.parse_text_proto(graph_of_strings([s]))["node"][0]["attr"][0]["value"][0][
            "s"] == [what], s
