"""Batch-norm folding on Keras 3 and tf-keras applications frozen by
graft.tf.freeze (random weights and batch-norm statistics, 64x64 inputs):
batch norms, nodes before and after, batch norms left in any form
(models.batch_norms_left), graft.apply's time and the largest difference
from the model's own output, relative to its largest value.

    TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python tests/interop/bench_keras3_fold.py

Prints one Markdown table row per model (docs/benchmarks.md keeps them)."""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "build", "python"))

import keras  # noqa: E402  Keras 3
import numpy as np  # noqa: E402
import tf_keras  # noqa: E402

import graft  # noqa: E402
import graft.tf  # noqa: E402
from models import batch_norms_left, randomize_batch_norms  # noqa: E402

APPLICATIONS = ("MobileNetV2", "EfficientNetB0", "ResNet50")


def main():
    rng = np.random.default_rng(0)
    print("| model | batch norms | nodes | left | apply | max rel. diff |")
    print("|---|---|---|---|---|---|")
    for lib, name in ((keras, "Keras 3"), (tf_keras, "tf-keras")):
        for app in APPLICATIONS:
            model = getattr(lib.applications, app)(weights=None, input_shape=(64, 64, 3), classes=10)
            randomize_batch_norms(rng, model, lib.layers.BatchNormalization)
            frozen = graft.tf.freeze(model)
            start = time.perf_counter()
            folded, _ = graft.apply(frozen, "fold_batch_norms")
            seconds = time.perf_counter() - start
            x = rng.standard_normal((2, 64, 64, 3)).astype(np.float32)
            want = np.asarray(model(x, training=False))
            got = np.asarray(graft.tf.to_function(folded)(x))
            bns = sum(isinstance(layer, lib.layers.BatchNormalization) for layer in model.layers)
            print("| %s %s | %d | %d -> %d | %d | %.0f ms | %.1e |" % (
                name, app, bns, len(frozen.to_graph_def().node), len(folded.to_graph_def().node),
                len(batch_norms_left(folded.to_graph_def().node)), 1000 * seconds,
                np.abs(want - got).max() / np.abs(want).max()))


if __name__ == "__main__":
    main()
