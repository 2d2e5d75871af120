"""The Python face's overhead over the library call from C++, measured in
one run (numbers in docs/benchmarks.md):

  .venv/bin/python tests/python/bench_api.py [REPEATS]

1. graft.apply of the inference pipeline on tf-keras InceptionV3 (299x299,
   random weights and batch-norm statistics, frozen) against api::Apply on
   the same bytes (tests/bench/api_bench): the ratio of the fastest calls.
2. The per-call overhead on a 10-node graph: graft.apply minus api::Apply,
   median of 2,000 calls each.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from conftest import repo_path  # noqa: E402  (stages the package path)

import graft  # noqa: E402

BENCH = repo_path("bazel-bin", "tests", "bench", "api_bench")
PIPELINE = repo_path("rules", "pipelines", "inference.yaml")


def inception(path):
    import numpy as np
    import tf_keras
    from tensorflow.python.framework import convert_to_constants
    import tensorflow as tf
    model = tf_keras.applications.InceptionV3(weights=None, input_shape=(299, 299, 3))
    rng = np.random.default_rng(0)
    for layer in model.layers:
        if isinstance(layer, tf_keras.layers.BatchNormalization):
            shape = layer.get_weights()[-1].shape
            w = ([rng.uniform(0.5, 1.5, shape)] if layer.scale else []) + \
                ([rng.uniform(-0.5, 0.5, shape)] if layer.center else []) + \
                [rng.uniform(-0.5, 0.5, shape), rng.uniform(0.5, 2.0, shape)]
            layer.set_weights([a.astype(np.float32) for a in w])
    fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec([1, 299, 299, 3], tf.float32, name="input"))
    frozen = convert_to_constants.convert_variables_to_constants_v2(fn)
    with open(path, "wb") as f:
        f.write(frozen.graph.as_graph_def().SerializeToString())


def small(path):
    """Ten nodes: a conv, a batch norm and its four statistics, a relu."""
    text = open(repo_path("tests", "python", "ten_nodes.pbtxt")).read()
    graft.load(text.encode(), format="pbtxt").save(path)


def cpp(model, repeats):
    out = subprocess.run([BENCH, model, PIPELINE, str(repeats)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def python(model, repeats):
    m = graft.load(model)
    rules = graft.RuleSet.compile(pipeline=PIPELINE)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        graft.apply(m, rules)
        times.append((time.perf_counter() - start) * 1e3)
    return {"min_ms": min(times), "median_ms": statistics.median(times)}


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        big, tiny = os.path.join(tmp, "inception_v3.pb"), os.path.join(tmp, "ten.pb")
        inception(big)
        small(tiny)
        nodes = graft.load(big).num_nodes
        c, p = cpp(big, repeats), python(big, repeats)
        print(f"InceptionV3 ({nodes} nodes, {os.path.getsize(big) / 1e6:.1f} MB), "
              f"inference pipeline, fastest of {repeats}:")
        print(f"  api::Apply (C++)  {c['min_ms']:9.1f} ms   median {c['median_ms']:9.1f} ms")
        print(f"  graft.apply       {p['min_ms']:9.1f} ms   median {p['median_ms']:9.1f} ms")
        print(f"  ratio             {p['min_ms'] / c['min_ms']:9.3f}")
        c, p = cpp(tiny, 2000), python(tiny, 2000)
        print(f"10 nodes, median of 2000: C++ {c['median_ms'] * 1e3:.1f} us, "
              f"Python {p['median_ms'] * 1e3:.1f} us, overhead "
              f"{(p['median_ms'] - c['median_ms']) * 1e3:.1f} us per call")


if __name__ == "__main__":
    main()
