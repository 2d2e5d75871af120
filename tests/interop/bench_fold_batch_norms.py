"""Benchmark (prints numbers; not a test): folding ResNet50's batch norms
with graft next to TensorFlow's own graph optimizer (Grappler, through its
Python API) doing the same work on the same frozen graph, in the same run.

  .venv/bin/python tests/interop/bench_fold_batch_norms.py

Grappler's constant folding, arithmetic and remapper passes fold inference
batch norms into the preceding convolutions (as fused convolutions); graft
applies rules/fold_batch_norms.graft. Both times include reading and
writing the graph; the best of 5 runs is reported.
"""
import os
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
    rules = os.path.join(ROOT, "rules", "fold_batch_norms.graft")
    graft_times = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([graft, "apply", "-q", "-r", rules, src, "-o",
                        os.path.join(tmp, "graft.pb")], check=True)
        graft_times.append(time.perf_counter() - start)

    tf_times = []
    for _ in range(5):
        start = time.perf_counter()
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
        with open(os.path.join(tmp, "grappler.pb"), "wb") as f:
            f.write(optimized.SerializeToString())
        tf_times.append(time.perf_counter() - start)

    g, t = min(graft_times), min(tf_times)
    print("graft apply (fold_batch_norms):   %.3f s" % g)
    print("TensorFlow Grappler (same graph): %.3f s" % t)
    print("ratio Grappler / graft: %.1fx" % (t / g))
    return 0


if __name__ == "__main__":
    sys.exit(main())
