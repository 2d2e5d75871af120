"""Benchmark (prints numbers; not a test): every GTT transform graft ships
(rules/tf/gtt), each run alone through `graft apply --transforms` on tf-keras
InceptionV3 (299x299, random weights and batch-norm statistics, frozen),
then the README's deployment string; the best of 3 runs, reading and
writing included.

  .venv/bin/python tests/interop/bench_gtt.py
"""
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import tf_keras  # noqa: E402

from conftest import graft_binary  # noqa: E402
from models import freeze, last_identity, randomize_batch_norms  # noqa: E402

DEPLOYMENT = ('strip_unused_nodes(type=float, shape="1,299,299,3") '
              'remove_nodes(op=Identity, op=CheckNumerics) fold_constants(ignore_errors=true) '
              'fold_batch_norms fold_old_batch_norms')


def main():
    model = tf_keras.applications.InceptionV3(weights=None, input_shape=(299, 299, 3))
    randomize_batch_norms(np.random.default_rng(0), model, tf_keras.layers.BatchNormalization)
    graph_def = freeze(model, [1, 299, 299, 3])
    output = last_identity(graph_def).split(":")[0]
    tmp = tempfile.mkdtemp()
    src = os.path.join(tmp, "inception_v3.pb")
    with open(src, "wb") as f:
        f.write(graph_def.SerializeToString())
    print("InceptionV3: %d nodes, %.1f MB" % (len(graph_def.node), os.path.getsize(src) / 1e6))
    rules = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "rules", "tf", "gtt")
    calls = {
        "remove_nodes": "remove_nodes(op=Identity, op=CheckNumerics)",
        "rename_node": "rename_node(old_node_name=%s, new_node_name=renamed)" % next(
            n.name for n in graph_def.node if n.op == "Conv2D"),
        "set_device": "set_device(device=/device:CPU:0)",
        "rename_op": "rename_op(old_op_name=Relu, new_op_name=Relu6)",
        "insert_logging": "insert_logging(op=Conv2D, show_name=true)",
        "remove_attribute": "remove_attribute(attribute_name=_output_shapes)",
        "rename_attribute": "rename_attribute(old_attribute_name=data_format, new_attribute_name=layout)",
    }
    # freeze_requantization_ranges needs an eight-bit graph and its min/max
    # log (tests/interop/test_gtt.py runs that recipe).
    names = sorted(f[:-6] for f in os.listdir(rules)
                   if f.endswith(".graft") and f != "freeze_requantization_ranges.graft")
    print("%-30s %10s %8s" % ("transform", "best ms", "nodes"))
    for name in names + ["deployment string"]:
        string = DEPLOYMENT if name == "deployment string" else calls.get(name, name)
        out = os.path.join(tmp, "out.pb")
        best = float("inf")
        for _ in range(3):
            # Not timed: freeing the previous 95 MB output (replacing it
            # costs ~50 ms of the file system's, not of graft's).
            if os.path.exists(out):
                os.remove(out)
            start = time.perf_counter()
            proc = subprocess.run([graft_binary(), "apply", "-q", "--transforms", string,
                                   "--inputs", "input", "--outputs", output, src, "-o", out],
                                  capture_output=True, text=True)
            best = min(best, time.perf_counter() - start)
            assert proc.returncode == 0, proc.stderr
        from tensorflow.core.framework import graph_pb2
        result = graph_pb2.GraphDef.FromString(open(out, "rb").read())
        print("%-30s %10.1f %8d" % (name, 1000 * best, len(result.node)))


if __name__ == "__main__":
    main()
