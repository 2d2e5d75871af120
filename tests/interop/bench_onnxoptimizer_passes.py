"""graft's rules/onnx/onnxoptimizer/ beside onnxoptimizer running the same passes
on the zoo (tests/interop/onnx_zoo.py): nodes left, time, largest output
difference in onnxruntime relative to the largest output. graft's time is
the whole command (start, read, rewrite, write); onnxoptimizer's is its
optimize() call alone.

  .venv/bin/python tests/interop/bench_onnxoptimizer_passes.py
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxoptimizer
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from onnx_zoo import example_input, make  # noqa: E402

PASSES = sorted(f[:-6] for f in os.listdir(os.path.join(ROOT, "rules", "onnx", "onnxoptimizer"))
                if f.endswith(".graft"))
MODELS = ["resnet50", "inception_v1", "inception_v2", "shufflenet", "squeezenet",
          "densenet121", "vgg19"]


def main():
    graft = os.path.join(ROOT, "bazel-bin", "cli", "graft")
    out = tempfile.mkdtemp()
    print("passes:", ",".join(PASSES))
    print("| model | nodes | graft | onnxoptimizer | graft s | onnxoptimizer s "
          "| graft diff | onnxoptimizer diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in MODELS:
        src = make(name, out)
        ours, theirs = os.path.join(out, "graft.onnx"), os.path.join(out, "opt.onnx")
        t = time.perf_counter()
        subprocess.run([graft, "apply", "-q", "--onnxoptimizer-passes", ",".join(PASSES),
                        src, "-o", ours], check=True, cwd=ROOT)
        graft_s = time.perf_counter() - t
        model = onnx.load(src)
        t = time.perf_counter()
        optimized = onnxoptimizer.optimize(model, PASSES)
        opt_s = time.perf_counter() - t
        onnx.save(optimized, theirs)
        feed = example_input(src)

        def run(path):
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            return session.run(None, {feed[0]: feed[1]})[0]
        want = run(src)
        diff = lambda p: np.abs(run(p) - want).max() / np.abs(want).max()  # noqa: E731
        nodes = lambda p: len(onnx.load(p).graph.node)  # noqa: E731
        print(f"| {name} | {nodes(src)} | {nodes(ours)} | {nodes(theirs)} | {graft_s:.2f} "
              f"| {opt_s:.2f} | {diff(ours):.1e} | {diff(theirs):.1e} |")


if __name__ == "__main__":
    main()
