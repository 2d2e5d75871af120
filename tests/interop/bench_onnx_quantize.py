"""graft's QDQ quantization (graft.calibrate + rules/onnx/quantize_qdq.graft)
beside onnxruntime's quantize_static (QDQ, per channel, uint8 activations,
int8 weights, MinMax) on zoo CNNs converted to opset 13, with the same 8
calibration inputs: SQNR of the logits against the float model and top-1
agreement on 16 other random inputs, and time (graft: calibration, then
the whole apply command; onnxruntime: its quantize_static call, which
calibrates too).

  .venv/bin/python tests/interop/bench_onnx_quantize.py
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import version_converter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
import graft.calibrate as calibrate  # noqa: E402
from onnx_zoo import example_input, make  # noqa: E402
from test_onnx_quantize import batches, ort_quantize, run, sqnr  # noqa: E402

MODELS = ["squeezenet", "resnet50", "inception_v1", "shufflenet", "densenet121"]


def main():
    graft = os.path.join(ROOT, "bazel-bin", "cli", "graft")
    out = tempfile.mkdtemp()
    print("| model | tool | SQNR dB | top-1 agreement | s |")
    print("|---|---|---:|---:|---:|")
    for name in MODELS:
        src = os.path.join(out, name + "_13.onnx")
        onnx.save(version_converter.convert_version(onnx.load(make(name, out)), 13), src)
        input_name, x = example_input(src)
        calibration = batches(input_name, x.shape, 8, seed=1)
        ours, theirs = os.path.join(out, "graft.onnx"), os.path.join(out, "ort.onnx")
        t = time.perf_counter()
        calibrate.onnx_ranges(src, calibration, os.path.join(out, "ranges.yaml"))
        subprocess.run([graft, "apply", "-q", "-r",
                        os.path.join(ROOT, "rules", "onnx", "quantize_qdq.graft"), "--param",
                        "ranges=" + os.path.join(out, "ranges.yaml"), src, "-o", ours],
                       check=True)
        graft_s = time.perf_counter() - t
        t = time.perf_counter()
        ort_quantize(src, theirs, calibration)
        ort_s = time.perf_counter() - t
        test = batches(input_name, x.shape, 16, seed=7)
        want = run(src, test)
        top = want.reshape(len(test), -1).argmax(1)
        for tool, path, s in (("graft", ours, graft_s), ("onnxruntime", theirs, ort_s)):
            got = run(path, test)
            agree = np.mean(got.reshape(len(test), -1).argmax(1) == top)
            print(f"| {name} | {tool} | {sqnr(want, got):.1f} | {agree:.2f} | {s:.2f} |")


if __name__ == "__main__":
    main()
