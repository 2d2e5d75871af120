"""`graft review --format markdown` of a one-line change to
rules/onnx/fold_batch_norms.graft over three torchvision exports of the
zoo (tests/data/zoo, written by torch's exporters): the comment leads, per
model, with the op-histogram change and the rewrites per rule, counts
nodes as onnx does (initializers, inputs and outputs apart), and keeps the
node-level diff behind --full, its removed constants on one line."""
import re
import shutil
import subprocess

import onnx
import pytest

from conftest import graft_binary, repo_path

# Exports whose batch norms the exporter left in the graph.
MODELS = ["mobilenet_v2.ts14.static", "mobilenet_v2.ts17.dynamic", "shufflenet_v2.ts17.static"]
LIBRARY = repo_path("rules", "onnx", "fold_batch_norms.graft")


def _nodes_and_norms(path):
    graph = onnx.load(path, load_external_data=False).graph
    return len(graph.node), sum(n.op_type == "BatchNormalization" for n in graph.node)


@pytest.fixture(scope="module")
def change(tmp_path_factory):
    """The models (copied to a folder of their own) and the library as
    changed: one condition of its conv rule that no conv meets."""
    tmp = tmp_path_factory.mktemp("review")
    models = tmp / "models"
    models.mkdir()
    for name in MODELS:
        shutil.copy(repo_path("tests", "data", "zoo", name + ".onnx"), models)
    text = open(LIBRARY).read()
    changed = text.replace("where uses(conv) == 1 and rank(scale) == 1",
                           "where uses(conv) == 2 and rank(scale) == 1", 1)
    assert changed != text, "the line the change edits is gone from the library"
    head = tmp / "fold_batch_norms.graft"
    head.write_text(changed)
    return tmp, models, head


def _review(change, *extra):
    tmp, models, head = change
    proc = subprocess.run([graft_binary(), "review", "--base", LIBRARY, "--head", str(head),
                           str(models), "--format", "markdown", *extra],
                          capture_output=True, text=True, cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_comment_leads_with_ops_and_rules(change, tmp_path):
    tmp, models, _ = change
    out = _review(change)
    rows = {m.group(1): m.group(2).split(" | ")
            for m in re.finditer(r"^\| `[^`]*/([^/`]+)\.onnx` \| (.*) \|$", out, re.M)}
    assert sorted(rows) == sorted(MODELS), out
    total = 0
    for name in MODELS:
        nodes, ops, rules, constants, outputs = rows[name]
        original = str(models / (name + ".onnx"))
        folded = str(tmp_path / (name + ".onnx"))
        proc = subprocess.run([graft_binary(), "apply", "-q", "-r", LIBRARY, original, "-o", folded],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        before, norms = _nodes_and_norms(original)
        after, left = _nodes_and_norms(folded)
        assert norms > 0 and left == 0, (name, norms, left)
        # onnx's own node counts, base (the library) first
        assert nodes == "%d -> %d" % (after, before), (name, nodes)
        assert ops.startswith("BatchNormalization +%d" % norms), (name, ops)
        assert "fold_conv_batch_norm: %d -> 0" % norms in rules, (name, rules)
        assert "->" in constants and outputs == "same", (name, constants, outputs)
        total += norms
    assert out.startswith("**graft review**: the change alters 3 of 3 model(s); rewrites "), out
    assert "fold_conv_batch_norm: %d -> 0" % total in out.splitlines()[0], out
    # the node-level diff only with --full
    assert "(Conv)" not in out and "--full" in out, out


def test_the_full_comment_folds_each_diff(change):
    out = _review(change, "--full")
    details = re.findall(r"<details><summary><code>[^<]*</code>: (\d+) added, (\d+) removed, "
                         r"(\d+) changed</summary>\n\n```diff\n(.*?)```\n</details>", out, re.S)
    assert len(details) == len(MODELS), out[-3000:]
    for added, removed, changed, diff in details:
        lines = diff.splitlines()
        assert lines[-1] == "%s added, %s removed, %s changed" % (added, removed, changed)
        constants = [l[0] for l in lines if " constant(s): " in l]
        # the folded weights removed, the originals added: one line each
        assert sorted(constants) == ["+", "-"], lines
        assert not any(l.endswith(" (Const)") for l in lines), lines[:20]
        assert all(l[:2] in ("+ ", "- ", "~ ", "  ") for l in lines[:-1]), lines
