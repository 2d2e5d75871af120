"""Benchmark (prints numbers; not a test): folding ResNet50's batch norms
with graft next to TensorFlow's own graph optimizer (Grappler, through its
Python API) doing the same work on the same frozen graph, in the same run.

  .venv/bin/python tests/interop/bench_fold_batch_norms.py

Grappler's constant folding, arithmetic and remapper passes fold inference
batch norms into the preceding convolutions (as fused convolutions); graft
applies rules/tf/fold_batch_norms.graft. TensorFlow's optimize_for_inference
(Python graph surgery) is timed too. All times include reading and
writing the graph. The tools take turns, 10 runs each, so that both see the
same machine; the best and the median are reported. Each run writes a new
output file; a second set of rows writes over the previous run's output,
which costs both tools an extra flush on file systems that force one when
a file is replaced (ext4's replace-via-rename and replace-via-truncate).
A plain copy of the input file is timed too: the cost of reading and
writing that many bytes at all.
"""
import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
from tensorflow.core.protobuf import config_pb2, meta_graph_pb2, rewriter_config_pb2  # noqa: E402
from tensorflow.python.framework import convert_to_constants  # noqa: E402
from tensorflow.python.grappler import tf_optimizer  # noqa: E402
from tensorflow.python.tools import optimize_for_inference_lib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    model = tf_keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3), classes=1000)
    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec([1, 224, 224, 3], tf.float32, name="input"))
    graph_def = convert_to_constants.convert_variables_to_constants_v2(fn).graph.as_graph_def()
    fetch = [n.name for n in graph_def.node if n.op == "Identity"][-1]
    tmp = tempfile.mkdtemp()
    src = os.path.join(tmp, "resnet50.pb")
    with open(src, "wb") as f:
        f.write(graph_def.SerializeToString())
    print("ResNet50 frozen: %d nodes, %.1f MB" % (len(graph_def.node), os.path.getsize(src) / 1e6))

    graft = os.path.join(ROOT, "bazel-bin", "cli", "graft")
    rules = os.path.join(ROOT, "rules", "tf", "fold_batch_norms.graft")

    def run_graft(out):
        subprocess.run([graft, "apply", "-q", "-r", rules, src, "-o", out], check=True)

    def run_grappler(out):
        loaded = tf.compat.v1.GraphDef()
        with open(src, "rb") as f:
            loaded.ParseFromString(f.read())
        meta = meta_graph_pb2.MetaGraphDef()
        meta.graph_def.CopyFrom(loaded)
        meta.collection_def["train_op"].node_list.value.append(fetch)
        config = config_pb2.ConfigProto()
        rewriter = config.graph_options.rewrite_options
        rewriter.optimizers[:] = ["constfold", "arithmetic", "remap"]
        rewriter.meta_optimizer_iterations = rewriter_config_pb2.RewriterConfig.ONE
        optimized = tf_optimizer.OptimizeGraph(config, meta)
        with open(out, "wb") as f:
            f.write(optimized.SerializeToString())

    def run_optimize_for_inference(out):
        loaded = tf.compat.v1.GraphDef()
        with open(src, "rb") as f:
            loaded.ParseFromString(f.read())
        result = optimize_for_inference_lib.optimize_for_inference(
            loaded, ["input"], [fetch], tf.float32.as_datatype_enum)
        with open(out, "wb") as f:
            f.write(result.SerializeToString())

    def run_copy(out):
        shutil.copyfile(src, out)

    tools = (("graft", run_graft), ("grappler", run_grappler), ("copy", run_copy))
    for replace, what in ((False, "new output file"), (True, "replacing the output")):
        times = {name: [] for name, _ in tools}
        for i in range(10):
            for name, fn in tools:
                out = os.path.join(tmp, "%s%s.pb" % (name, "" if replace else i))
                gc.collect()
                start = time.perf_counter()
                fn(out)
                times[name].append(time.perf_counter() - start)
                if not replace:
                    os.remove(out)
        best = {name: min(t) for name, t in times.items()}
        median = {name: statistics.median(t) for name, t in times.items()}
        print("%s (best / median of 10):" % what)
        print("  graft apply (fold_batch_norms):   %.3f s / %.3f s" % (best["graft"], median["graft"]))
        print("  TensorFlow Grappler (same graph): %.3f s / %.3f s" % (best["grappler"], median["grappler"]))
        print("  copying the input file:           %.3f s / %.3f s" % (best["copy"], median["copy"]))
        print("  ratio Grappler / graft: %.1fx best, %.1fx median" % (
            best["grappler"] / best["graft"], median["grappler"] / median["graft"]))
    # TensorFlow's other inference optimizer, after (its garbage would slow
    # the others down if it ran between them).
    times = []
    for i in range(5):
        out = os.path.join(tmp, "ofi%d.pb" % i)
        gc.collect()
        start = time.perf_counter()
        run_optimize_for_inference(out)
        times.append(time.perf_counter() - start)
        os.remove(out)
    print("TF optimize_for_inference (best of 5): %.3f s" % min(times))
    # What each did: batch norms left in its output.
    for name, fn in (tools[0], tools[1], ("optimize_for_inference", run_optimize_for_inference)):
        out = os.path.join(tmp, "check_%s.pb" % name)
        fn(out)
        result = tf.compat.v1.GraphDef()
        with open(out, "rb") as f:
            result.ParseFromString(f.read())
        left = sum(1 for n in result.node if "BatchNorm" in n.op)
        print("%s output: %d nodes, %d batch norms left" % (name, len(result.node), left))
    return 0


if __name__ == "__main__":
    sys.exit(main())
