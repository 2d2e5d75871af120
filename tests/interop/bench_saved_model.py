"""SavedModels frozen and folded by graft against TensorFlow's own freezing
(convert_variables_to_constants_v2 of the loaded serving signature), in the
same run: sizes, times, batch norms left, output difference; and the same
models folded in place (--saved-model in-place: variables kept, the folded
weights constants of the functions).

  .venv/bin/python tests/interop/bench_saved_model.py [MODEL...]

Models: tf-keras applications (weights=None, random batch-norm statistics,
224x224) saved with tf.saved_model.save. Prints two markdown tables for
docs/benchmarks.md.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
from tensorflow.python.framework import convert_to_constants  # noqa: E402

from conftest import graft_binary, repo_path  # noqa: E402
from models import randomize_batch_norms  # noqa: E402
from test_saved_model_freeze import (  # noqa: E402
    foldable_batch_norms, folder_size, graph_ops, serve)

BATCH_NORMS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")


def in_place_row(name, src, out, want, x):
    start = time.perf_counter()
    subprocess.run([graft_binary(), "apply", "-q", "-r",
                    repo_path("rules", "tf", "fold_batch_norms.graft"), "--saved-model",
                    "in-place", src, "-o", out], check=True)
    seconds = time.perf_counter() - start
    (got,) = serve(out, x).values()
    rel = np.abs(want - got).max() / np.abs(want).max()
    return (f"| {name} | {folder_size(src) / 2**20:.1f} MiB | "
            f"{folder_size(out) / 2**20:.1f} MiB | {seconds:.2f} s | "
            f"{len(foldable_batch_norms(src))} -> {len(foldable_batch_norms(out))} | "
            f"{rel:.1e} |")


def main(names):
    rows, in_place = [], []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            model = getattr(tf_keras.applications, name)(weights=None)
            randomize_batch_norms(np.random.default_rng(0), model,
                                  tf_keras.layers.BatchNormalization)
            src = os.path.join(tmp, name)
            tf.saved_model.save(model, src)
            out = os.path.join(tmp, "folded")
            report = os.path.join(tmp, "report.json")
            start = time.perf_counter()
            subprocess.run([graft_binary(), "apply", "-q", "-r",
                            repo_path("rules", "tf", "fold_batch_norms.graft"), src, "-o", out,
                            "--report", report], check=True)
            graft_s = time.perf_counter() - start
            r = json.load(open(report))
            start = time.perf_counter()
            loaded = tf.saved_model.load(src)  # kept: the signature reads its variables
            frozen = convert_to_constants.convert_variables_to_constants_v2(
                loaded.signatures["serving_default"])
            tf_s = time.perf_counter() - start
            tf_bns = sum(n.op in BATCH_NORMS for n in frozen.graph.as_graph_def().node)
            x = np.random.default_rng(1).standard_normal((2, 224, 224, 3)).astype(np.float32)
            (want,) = serve(src, x).values()
            (got,) = serve(out, x).values()
            rel = np.abs(want - got).max() / np.abs(want).max()
            ops = graph_ops(out)
            rows.append(
                f"| {name} | {folder_size(src) / 2**20:.1f} MiB | "
                f"{folder_size(out) / 2**20:.1f} MiB | {r['freeze']['ms']:.0f} ms "
                f"({r['freeze']['calls_inlined']} calls, {r['freeze']['variables']} variables) | "
                f"{graft_s:.2f} s | {sum(op in BATCH_NORMS for op in ops)} | "
                f"{tf_s:.2f} s, {tf_bns} batch norms left | {rel:.1e} |")
            print(rows[-1], flush=True)
            in_place.append(in_place_row(name, src, os.path.join(tmp, "in_place"), want, x))
            print(in_place[-1], flush=True)
    print("| model | SavedModel | frozen + folded | graft freeze | graft apply "
          "(process) | BNs left | TF freeze (load + convert) | max diff / max |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print("| model | SavedModel | in place + folded | graft apply in place (process) "
          "| foldable BNs (all functions) | max diff / max |")
    print("|---|---|---|---|---|---|")
    print("\n".join(in_place))


if __name__ == "__main__":
    main(sys.argv[1:] or ["MobileNetV2", "EfficientNetB0", "ResNet50"])
