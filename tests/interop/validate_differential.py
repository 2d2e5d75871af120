"""Differential test of `graft validate` against TensorFlow's importer.

Mutates the repository's graphs (the golden inputs, the example model, the
training graphs) the ways a broken tool or a careless edit would: a required
attr dropped, an attr the op does not have, an attr of the wrong kind, a
type the op does not take, a count attr off by one, an input dropped or
added, a control input before the data inputs, an input naming no node, a
Const whose dtype attr disagrees with its value, a misspelt op name, a
misspelt attr name, a string attr with a value its op does not allow, a
list attr shorter than its op's minimum. Each mutant goes to
`graft validate` and to `tf.graph_util.import_graph_def` in a child process
(TensorFlow may abort on a bad Const); the verdicts must agree.

    .venv/bin/python tests/interop/validate_differential.py [--count 1000] [--seed 1]
"""
import argparse
import glob
import os
import random
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

WORKER = r'''
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
for line in sys.stdin:
    path = line.strip()
    g = tf.compat.v1.GraphDef()
    g.ParseFromString(open(path, "rb").read())
    try:
        with tf.Graph().as_default():
            tf.graph_util.import_graph_def(g, name="")
        print("ok " + path, flush=True)
    except Exception as e:
        msg = str(e).replace("\n", " ")[:300]
        print("error " + path + " " + msg, flush=True)
'''


def base_graphs():
    import tensorflow as tf
    from google.protobuf import text_format
    graphs = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "golden", "*", "in.pbtxt"))):
        g = tf.compat.v1.GraphDef()
        text_format.Parse(open(path).read(), g)
        graphs.append((os.path.relpath(path, ROOT), g))
    for path in [os.path.join(ROOT, "examples", "keras_cnn.pb")] + sorted(
            glob.glob(os.path.join(ROOT, "tests", "data", "*.pb"))):
        g = tf.compat.v1.GraphDef()
        g.ParseFromString(open(path, "rb").read())
        graphs.append((os.path.relpath(path, ROOT), g))
    return graphs


def mutate(g, rng):
    """A copy of `g` with one mutation, and its name; None if none applies."""
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry
    m = tf.compat.v1.GraphDef()
    m.CopyFrom(g)
    nodes = list(m.node)
    if not nodes:
        return None, None
    n = rng.choice(nodes)
    op = op_def_registry.get(n.op)
    kind = rng.choice(["none", "drop_attr", "extra_attr", "attr_kind", "bad_type",
                       "count", "drop_input", "add_input", "control_first",
                       "missing_input", "const_dtype", "op_name", "attr_name",
                       "string_value", "list_length"])
    if kind == "none":
        return m, "none"
    if op is None:
        return None, None
    if kind == "drop_attr":
        required = [a.name for a in op.attr if not a.HasField("default_value") and a.name in n.attr]
        if not required:
            return None, None
        del n.attr[rng.choice(required)]
    elif kind == "extra_attr":
        n.attr["graft_extra"].i = 1
    elif kind == "attr_kind":
        types = [a.name for a in op.attr if a.type == "type" and a.name in n.attr]
        if not types:
            return None, None
        n.attr[rng.choice(types)].s = b"float"
    elif kind == "bad_type":
        types = [a for a in op.attr if a.type == "type" and a.name in n.attr
                 and a.allowed_values.list.type and tf.string.as_datatype_enum
                 not in a.allowed_values.list.type]
        if not types:
            return None, None
        n.attr[rng.choice(types).name].type = tf.string.as_datatype_enum
    elif kind == "count":
        counts = [a.name for a in op.attr if a.type == "int" and a.name in n.attr
                  and any(arg.number_attr == a.name for arg in op.input_arg)]
        if not counts:
            return None, None
        n.attr[rng.choice(counts)].i += rng.choice([-1, 1])
    elif kind == "drop_input":
        data = [i for i in n.input if not i.startswith("^")]
        if not data:
            return None, None
        n.input.remove(rng.choice(data))
    elif kind == "add_input":
        data = [i for i in n.input if not i.startswith("^")]
        if not data:
            return None, None
        n.input.insert(len(data), data[0])
    elif kind == "control_first":
        others = [x.name for x in nodes if x.name != n.name]
        if not others or not any(not i.startswith("^") for i in n.input):
            return None, None
        n.input.insert(0, "^" + rng.choice(others))
    elif kind == "missing_input":
        data = [k for k, i in enumerate(n.input) if not i.startswith("^")]
        if not data:
            return None, None
        n.input[rng.choice(data)] = "graft_no_such_node"
    elif kind == "const_dtype":
        if n.op != "Const" or "dtype" not in n.attr:
            return None, None
        n.attr["dtype"].type = (tf.int32 if n.attr["dtype"].type != tf.int32.as_datatype_enum
                                else tf.float32).as_datatype_enum
    elif kind == "op_name":
        name = list(n.op)
        i = rng.randrange(len(name))
        del name[i]  # as "Placehodler" or "Conv2" would be written
        n.op = "".join(name)
    elif kind == "attr_name":
        names = [a for a in n.attr if not a.startswith("_") and len(a) > 2]
        if not names:
            return None, None
        a = rng.choice(names)
        n.attr[a[:-1]].CopyFrom(n.attr[a])
        del n.attr[a]
    elif kind == "string_value":
        strings = [a.name for a in op.attr if a.type == "string" and a.name in n.attr
                   and a.allowed_values.list.s]
        if not strings:
            return None, None
        a = rng.choice(strings)
        n.attr[a].s = n.attr[a].s[:-1] + b"x"
    elif kind == "list_length":
        lists = [a.name for a in op.attr if a.type.startswith("list(") and a.name in n.attr
                 and a.has_minimum and a.minimum > 0]
        if not lists:
            return None, None
        a = n.attr[rng.choice(lists)].list
        for field in ("i", "f", "s", "b", "type", "shape", "tensor", "func"):
            del getattr(a, field)[:]
    return m, kind


def tensorflow_verdicts(paths):
    """path -> ("ok" | "error" | "abort", message), importing in a worker
    that is restarted after each abort."""
    verdicts = {}
    todo = list(paths)
    while todo:
        proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        out, _ = proc.communicate("\n".join(todo) + "\n")
        for line in out.splitlines():
            word, path, *rest = line.split(" ", 2)
            verdicts[path] = (word, rest[0] if rest else "")
        todo = [p for p in todo if p not in verdicts]
        if todo:  # the worker died on todo[0]
            verdicts[todo[0]] = ("abort", "TensorFlow aborted the process")
            todo = todo[1:]
    return verdicts


def graft_verdict(graft, path):
    proc = subprocess.run([graft, "validate", path], capture_output=True, text=True)
    return ("ok" if proc.returncode == 0 else "error"), proc.stderr.strip().split("\n")[0]


def importable(graphs, work):
    """The graphs TensorFlow imports as they are, and the names of those it
    refuses (a base that TensorFlow refuses says nothing about a mutation)."""
    paths = []
    for k, (name, g) in enumerate(graphs):
        path = os.path.join(work, "base%03d.pb" % k)
        with open(path, "wb") as f:
            f.write(g.SerializeToString())
        paths.append(path)
    verdicts = tensorflow_verdicts(paths)
    keep = [gr for gr, p in zip(graphs, paths) if verdicts[p][0] == "ok"]
    refused = [gr[0] for gr, p in zip(graphs, paths) if verdicts[p][0] != "ok"]
    return keep, refused


def write_mutants(bases, mutate, count, rng, work, suffix):
    """`count` mutants of (name, message) `bases` written to `work`:
    [(path, base name, mutation kind)]."""
    cases = []
    while len(cases) < count:
        name, base = rng.choice(bases)
        m, kind = mutate(base, rng)
        if m is None:
            continue
        path = os.path.join(work, "%04d%s" % (len(cases), suffix))
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        cases.append((path, name, kind))
    return cases


def run(count, seed, graft):
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="graft-diff-")
    graphs, refused = importable(base_graphs(), work)
    cases = write_mutants(graphs, mutate, count, rng, work, ".pb")
    tf_verdicts = tensorflow_verdicts([p for p, _, _ in cases])
    disagreements = []
    by_kind = {}
    for path, name, kind in cases:
        tf_word, tf_msg = tf_verdicts[path]
        tf_ok = tf_word == "ok"
        graft_word, graft_msg = graft_verdict(graft, path)
        agree = tf_ok == (graft_word == "ok")
        total, same = by_kind.get(kind, (0, 0))
        by_kind[kind] = (total + 1, same + agree)
        if not agree:
            disagreements.append((kind, name, tf_word, tf_msg, graft_word, graft_msg))
    return cases, by_kind, disagreements, refused


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    graft = os.environ.get("GRAFT_BIN", os.path.join(ROOT, "bazel-bin", "cli", "graft"))
    cases, by_kind, disagreements, refused = run(args.count, args.seed, graft)
    for name in refused:
        print("base graph TensorFlow refuses as it is (left out): %s" % name)
    print("%d graphs, %d disagreements" % (len(cases), len(disagreements)))
    for kind, (total, same) in sorted(by_kind.items()):
        print("  %-14s %4d graphs, %4d agree" % (kind, total, same))
    for d in disagreements[:40]:
        print("DISAGREE %s on %s: TensorFlow %s (%s); graft %s (%s)" % d)
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
