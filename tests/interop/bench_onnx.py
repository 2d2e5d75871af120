"""Batch-norm folding on ONNX models: graft (rules/onnx/fold_batch_norms.graft)
against onnxoptimizer's fuse_bn_into_conv alone and then onnxsim, in the
same run, each in its own process (time and peak RSS of that process):
batch norms left, nodes left, max |output diff| / max |output| in
onnxruntime.

  .venv/bin/python tests/interop/bench_onnx.py [MODEL...]

Models: tests/interop/onnx_zoo.py (onnx's light architectures with random
weights and batch-norm statistics). Needs onnxoptimizer and onnxsim
(scripts/requirements.txt). Prints a markdown table for docs/benchmarks.md.
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

from conftest import graft_binary, repo_path  # noqa: E402
from onnx_zoo import example_input, make  # noqa: E402

PEER = r"""
import sys, onnx
src, out, tool = sys.argv[1:4]
model = onnx.load(src)
import onnxoptimizer
model = onnxoptimizer.optimize(model, ["fuse_bn_into_conv"])
if tool == "onnxsim":
    import onnxsim
    model, ok = onnxsim.simplify(model)
    assert ok
onnx.save(model, out)
"""


def timed(cmd, timeout=None):
    """Runs `cmd` under /usr/bin/time; returns (seconds, its peak RSS in
    MiB). (Measured by `time`, a small process, not through this one's
    fork, whose image would count.) Past `timeout` seconds: RuntimeError."""
    start = time.perf_counter()
    limit = ["timeout", "-s", "KILL", str(timeout)] if timeout else []
    proc = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M"] + limit + cmd,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if timeout and proc.returncode in (124, 137):
        raise RuntimeError("stopped after %d s" % timeout)
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %s" % (cmd[0], proc.stderr[-2000:]))
    rss = [line for line in proc.stderr.splitlines() if line.startswith("MAXRSS ")]
    return seconds, int(rss[-1].split()[1]) / 1024


def outputs(path, feed):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {feed[0]: feed[1]})[0]


def main(names):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            src = make(name, tmp)
            feed = example_input(src)
            want = outputs(src, feed)
            tools = [
                ("graft", [graft_binary(), "apply", "-q", "-r",
                           repo_path("rules", "onnx", "fold_batch_norms.graft"), src, "-o"]),
                ("onnxoptimizer fuse_bn_into_conv",
                 [sys.executable, "-c", PEER, src, None, "onnxoptimizer"]),
                ("+ onnxsim", [sys.executable, "-c", PEER, src, None, "onnxsim"]),
            ]
            for tool, cmd in tools:
                out = os.path.join(tmp, "%s.%d.onnx" % (name, len(rows)))
                cmd = [out if c is None else c for c in cmd]
                if tool == "graft":
                    cmd.append(out)
                seconds, rss = timed(cmd)
                ops = [n.op_type for n in onnx.load(out).graph.node]
                got = outputs(out, feed)
                rel = np.abs(want - got).max() / np.abs(want).max()
                rows.append("| %s | %s | %.2f s | %.0f MiB | %d | %d -> %d | %.1e |" % (
                    name, tool, seconds, rss, ops.count("BatchNormalization"),
                    len(onnx.load(src).graph.node), len(ops), rel))
                print(rows[-1], flush=True)
    print("| model | tool | time (process) | peak RSS | BNs left | nodes | max diff / max |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1:] or ["resnet50", "inception_v2", "shufflenet", "densenet121"])
