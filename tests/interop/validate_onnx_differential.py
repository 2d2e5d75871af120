"""Differential test of `graft validate` on ONNX models against
`onnx.checker.check_model(full_check=True)`.

Mutates small real models (the onnx wheel's backend node test cases, one
op each, every op of the standard, built by
`onnx.backend.test.case.node.collect_testcases`; its simple and
PyTorch-exported test models; tests/data/onnx/conv_bn.onnx) the ways a
broken exporter or a careless edit would: a required input dropped, an
input too many, an input naming no value, a misspelt op, a misspelt attr,
an attr of the wrong type, a required attr dropped, two nodes writing one
value, a node moved before its producer, an opset too old for the op, a
graph input of a type the op does not take, a graph output nothing
produces, a domain no opset imports, an IR version out of range. Each
mutant goes to both; the verdicts (valid or not) must agree.

    .venv/bin/python tests/interop/validate_onnx_differential.py [--count 1000] [--seed 1]

Deliberate differences (deliberate() below), counted and printed apart:
- shape and op-specific inference: graft checks every node's element types
  as onnx.checker's type inference does, not the dimensions its shape
  inference computes nor ops' own inference rules, so a mutant whose only
  fault is a dimension that disagrees with a declared one (a Concat input
  dropped, Gemm's bias of the wrong length), an Einsum equation that does
  not fit its inputs or Attention's past_key without past_value is valid
  to graft;
- types the graph IR lacks (float8, float4, int4, int2; sequences and
  optionals): values of those types are not type-checked.
"""
import argparse
import glob
import os
import random
import re
import subprocess
import sys
import tempfile

from validate_differential import ROOT, write_mutants

KINDS = ["none", "drop_input", "add_input", "missing_value", "op_name", "attr_name",
         "attr_type", "drop_attr", "duplicate_output", "reorder", "old_opset",
         "input_type", "missing_output", "domain", "ir_version"]

TYPE_WORDS = ("TypeInferenceError", "elem type", "unsupported type", "inconsistent type")
NARROW_TYPES = ("float8", "float4", "int4", "uint4", "int2", "uint2", "Sequence", "sequence",
                "optional(")
OP_RULES = ("forbids", "must be provided together", "equation")


def deliberate(checker_word, checker_msg, graft_word):
    """Why a disagreement is by design, or None."""
    if checker_word != "error" or graft_word != "ok":
        return None
    codes = re.findall(r"\((\d+)\) vs \((\d+)\)", checker_msg)
    if any(t in checker_msg for t in NARROW_TYPES) or any(
            int(c) >= 17 for pair in codes for c in pair):  # float8 and narrower
        return "an element type the IR lacks"
    if "ShapeInferenceError" in checker_msg and (
            not any(w in checker_msg for w in TYPE_WORDS)
            or any(w in checker_msg for w in OP_RULES)):
        return "shape or op-specific inference"
    return None


def base_models():
    """(name, ModelProto) of every small model onnx.checker accepts as it
    is, and the names of those it refuses (left out)."""
    import warnings

    import onnx
    from onnx.backend.test.case import node
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    paths = [os.path.join(ROOT, "tests", "data", "onnx", "conv_bn.onnx")]
    for kind in ("simple", "pytorch-converted", "pytorch-operator"):
        paths += sorted(glob.glob(os.path.join(root, kind, "*", "model.onnx")))
    named = [(os.path.relpath(p, root) if p.startswith(root) else os.path.relpath(p, ROOT),
              onnx.load(p)) for p in paths]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        named += [("node/" + c.name, c.model) for c in node.collect_testcases(None)]
    keep, refused = [], []
    for name, model in named:
        try:
            onnx.checker.check_model(model, full_check=True)
        except Exception:  # noqa: BLE001 - any refusal
            refused.append(name)
            continue
        if model.functions or any(a.type in (5, 10) for n in model.graph.node
                                  for a in n.attribute):
            refused.append(name)  # functions and subgraphs: not mutated here
            continue
        keep.append((name, model))
    return keep, refused


def _schema(node, opset):
    import onnx
    try:
        return onnx.defs.get_schema(node.op_type, opset, node.domain)
    except Exception:  # noqa: BLE001
        return None


def _opset(model):
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def mutate(model, rng):
    """A copy of `model` with one mutation, and its kind; None if the drawn
    kind does not apply."""
    import onnx
    from onnx import TensorProto
    m = onnx.ModelProto()
    m.CopyFrom(model)
    nodes = list(m.graph.node)
    if not nodes:
        return None, None
    k = rng.randrange(len(nodes))
    n = m.graph.node[k]
    schema = _schema(n, _opset(m))
    kind = rng.choice(KINDS)
    if kind == "none":
        pass
    elif kind == "drop_input":
        if schema is None or not n.input or n.input[0] == "":
            return None, None
        del n.input[0]
    elif kind == "add_input":
        if not n.input:
            return None, None
        n.input.append(n.input[0])
    elif kind == "missing_value":
        real = [i for i, v in enumerate(n.input) if v]
        if not real:
            return None, None
        n.input[rng.choice(real)] = "graft_no_such_value"
    elif kind == "op_name":
        name = list(n.op_type)
        del name[rng.randrange(len(name))]
        n.op_type = "".join(name)
    elif kind == "attr_name":
        if not n.attribute:
            return None, None
        a = rng.choice(list(n.attribute))
        a.name = a.name + "x"
    elif kind == "attr_type":
        simple = [a for a in n.attribute if a.type in (1, 2, 3)]  # FLOAT, INT, STRING
        if not simple:
            return None, None
        a = rng.choice(simple)
        if a.type == 2:
            a.type, a.f = 1, float(a.i)
            a.ClearField("i")
        else:
            a.ClearField("f")
            a.ClearField("s")
            a.type, a.i = 2, 1
    elif kind == "drop_attr":
        if schema is None:
            return None, None
        required = [a for a in n.attribute if a.name in schema.attributes
                    and schema.attributes[a.name].required]
        if not required:
            return None, None
        n.attribute.remove(rng.choice(required))
    elif kind == "duplicate_output":
        if len(nodes) < 2 and not m.graph.input:
            return None, None
        other = [o for x in nodes if x is not n for o in x.output if o] + [
            i.name for i in m.graph.input]
        if not other or not n.output:
            return None, None
        n.output[0] = rng.choice(other)
    elif kind == "reorder":
        if len(nodes) < 2 or k == 0:
            return None, None
        moved = onnx.NodeProto()
        moved.CopyFrom(n)
        del m.graph.node[k]
        m.graph.node.insert(0, moved)
    elif kind == "old_opset":
        for o in m.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = 1
    elif kind == "input_type":
        if not m.graph.input:
            return None, None
        i = rng.choice(list(m.graph.input))
        if not i.type.HasField("tensor_type"):
            return None, None
        t = i.type.tensor_type.elem_type
        i.type.tensor_type.elem_type = (TensorProto.STRING if t != TensorProto.STRING
                                        else TensorProto.FLOAT)
    elif kind == "missing_output":
        if not m.graph.output:
            return None, None
        m.graph.output[0].name = "graft_nothing_makes_this"
    elif kind == "domain":
        n.domain = "org.graft.unknown"
    elif kind == "ir_version":
        m.ir_version = rng.choice([2, 99])
    return m, kind


def checker_verdict(path):
    import onnx
    try:
        onnx.checker.check_model(path, full_check=True)
        return "ok", ""
    except Exception as e:  # noqa: BLE001
        return "error", str(e).replace("\n", " ")[:300]


def graft_verdicts(graft, paths):
    """path -> (verdict, first message line), by `graft validate` per model."""
    out = {}
    for path in paths:
        proc = subprocess.run([graft, "validate", path], capture_output=True, text=True)
        word = "ok" if proc.returncode == 0 else "error"
        lines = (proc.stderr or proc.stdout).strip().split("\n")
        out[path] = (word, lines[0][:300])
    return out


def run(count, seed, graft):
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="graft-onnx-diff-")
    models, refused = base_models()
    cases = write_mutants(models, mutate, count, rng, work, ".onnx")
    verdicts = graft_verdicts(graft, [p for p, _, _ in cases])
    disagreements, by_kind, by_design = [], {}, []
    for path, name, kind in cases:
        c_word, c_msg = checker_verdict(path)
        g_word, g_msg = verdicts[path]
        why = None if c_word == g_word else deliberate(c_word, c_msg, g_word)
        agree = c_word == g_word or why is not None
        total, same = by_kind.get(kind, (0, 0))
        by_kind[kind] = (total + 1, same + agree)
        if why is not None:
            by_design.append((why, kind, name, c_msg))
        elif not agree:
            disagreements.append((kind, name, c_word, c_msg, g_word, g_msg))
    return cases, by_kind, disagreements, refused, len(models), by_design


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    graft = os.environ.get("GRAFT_BIN", os.path.join(ROOT, "bazel-bin", "cli", "graft"))
    cases, by_kind, disagreements, refused, bases, by_design = run(args.count, args.seed, graft)
    print("%d base models (%d left out: refused by onnx.checker as they are, or with "
          "functions or subgraphs)" % (bases, len(refused)))
    print("%d models, %d disagreements" % (len(cases), len(disagreements)))
    for kind, (total, same) in sorted(by_kind.items()):
        print("  %-16s %4d models, %4d agree" % (kind, total, same))
    print("%d of them differ by design:" % len(by_design))
    for d in by_design:
        print("  BY DESIGN (%s) %s on %s: onnx.checker says %s" % d)
    for d in disagreements[:60]:
        print("DISAGREE %s on %s: onnx.checker %s (%s); graft %s (%s)" % d)
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
