"""Benchmark (prints numbers; not a test): graft's training-memory
libraries on a full-size ResNet-50 training step, the graph that
docs/benchmarks.md's ResNet-50 rows are measured on.

tf-keras ResNet50 (`weights=None`, 1000 classes, batch 32, 224x224, called
with `training=True`, so its batch norms have no learning-phase branches)
in a tf.compat.v1 graph: softmax cross-entropy `loss`, `tf.gradients` and
plain SGD updates (tests/interop/training_graphs.py's `keras_resnet50`).
graft finds the loss and the gradient seed itself; for swapping it is told
that the unplaced ops are on an H100 PCIe (`--device-default
/device:GPU:0 --device h100_pcie`). Printed:
graft mem's accelerator and host peaks of each result (one op at a time,
the schedule the planners plan for), the copies and the
step time graft cost gives them, and each apply's wall time (load, plan,
rewrite and save). Nothing here runs the step itself: on this machine's
CPUs a ResNet-50 training step at batch 32 takes tens of seconds.

  .venv/bin/python tests/interop/bench_resnet50_training.py [--keep DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import device_peaks, graft_binary, repo_path  # noqa: E402
import training_graphs  # noqa: E402

GPU = "/device:GPU:0"
SWAP = ["--device-default", GPU, "--device", "h100_pcie"]
GiB, MiB = 2**30, 2**20


def run(args):
    start = time.perf_counter()
    proc = subprocess.run([graft_binary(), *args], capture_output=True, text=True)
    return proc, time.perf_counter() - start


def peaks(path, device_default):
    """graft mem's peak per device, one op at a time (the schedule the
    planners plan for): {device: bytes}."""
    extra = ["--device-default", GPU] if device_default else []
    return {d or "(unplaced)": b for d, b in device_peaks(path, "--threads", "1", *extra).items()}


def apply(src, out, rules, params, extra=()):
    """graft apply: (None, graft's error) if it refused, else (its summary,
    the wall time)."""
    args = ["apply", "-r", repo_path("rules", "tf", rules), src, "-o", out, *extra]
    for p in params:
        args += ["--param", p]
    proc, seconds = run(args)
    if proc.returncode != 0:
        lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        return None, lines[-1] if lines else "exit %d" % proc.returncode
    return proc.stderr, seconds


def size(b):
    return "%.2f GiB" % (b / GiB) if b >= GiB else "%.1f MiB" % (b / MiB)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="write the graphs to this folder")
    opts = parser.parse_args(argv)
    tmp = opts.keep or tempfile.mkdtemp(prefix="graft-resnet50-")
    os.makedirs(tmp, exist_ok=True)
    src = os.path.join(tmp, "resnet50_train.pb")
    graph_def = training_graphs.keras_resnet50().as_graph_def()
    with open(src, "wb") as f:
        f.write(graph_def.SerializeToString())
    print("ResNet-50 training graph: %d nodes" % len(graph_def.node))

    before = peaks(src, device_default=True)[GPU]
    proc, _ = run(["cost", *SWAP, src])
    step = re.search(r"total: ([0-9.]+) us", proc.stdout)
    print("\nswap (rules/tf/swap.graft), accelerator peak before: %s, step %s ms\n" % (
        size(before), "%.1f" % (float(step.group(1)) / 1e3) if step else "?"))
    print("| swap | accelerator peak | host peak | copies | step (copies overlapped) | apply |")
    print("|---|---:|---:|---:|---:|---:|")
    cases = [
        ("defaults (>= 1 MiB, >= 50 ops)", []),
        ("`budget_bytes` = 1.5 GiB", ["budget_bytes=%d" % int(1.5 * GiB)]),
        ("`budget_bytes` = 1.5 GiB, `budget_headroom=0`",
         ["budget_bytes=%d" % int(1.5 * GiB), "budget_headroom=0"]),
        ("`budget_bytes` = 1 GiB, `budget_headroom=0`",
         ["budget_bytes=%d" % GiB, "budget_headroom=0"]),
    ]
    for i, (label, params) in enumerate(cases):
        out = os.path.join(tmp, "swap_%d.pb" % i)
        summary, seconds = apply(src, out, "swap.graft", params, SWAP)
        if summary is None:
            print("| %s | refused: %s | | | | |" % (label, seconds))
            continue
        after = peaks(out, device_default=True)
        host = max((b for d, b in after.items() if d != GPU), default=0)
        link = re.search(r"copies between devices: (\d+), ([0-9.]+) us over the host link; "
                         r"step ([0-9.]+) -> ([0-9.]+) us", summary)
        copies, link_us, step_before, step_after = (
            (int(link.group(1)), float(link.group(2)), float(link.group(3)), float(link.group(4)))
            if link else (0, 0.0, 0.0, 0.0))
        print("| %s | %s (%.2fx) | %s | %d (%.1f ms on the link) | %.1f ms (%+.0f%%) | %.2f s |" % (
            label, size(after[GPU]), before / after[GPU], size(host) if host else "-", copies,
            link_us / 1e3, step_after / 1e3,
            100 * (step_after / step_before - 1) if step_before else 0, seconds))

    whole = peaks(src, device_default=False)
    peak = max(whole.values())
    print("\ncheckpoint (rules/tf/checkpoint.graft, strategy=budget), peak before: %s\n" % size(peak))
    print("| budget | graft mem after | headroom 0 | apply |")
    print("|---|---:|---:|---:|")
    for fraction in (0.75, 0.5, 0.38):
        budget = int(fraction * peak)
        row = []
        for headroom in ([], ["budget_headroom=0"]):
            out = os.path.join(tmp, "checkpoint_%d_%d.pb" % (100 * fraction, len(headroom)))
            summary, seconds = apply(src, out, "checkpoint.graft",
                                     ["strategy=budget", "budget_bytes=%d" % budget, *headroom])
            if summary is None:
                row.append(("refused: %s" % seconds.split("plan `checkpoints`: ")[-1], None))
            else:
                got = max(peaks(out, device_default=False).values())
                row.append(("%s (%.2f)" % (size(got), got / budget), seconds))
        print("| %s (%.2f) | %s | %s | %s |" % (
            size(budget), fraction, row[0][0], row[1][0],
            " / ".join("%.2f s" % s for _, s in row if s is not None)))


if __name__ == "__main__":
    main(sys.argv[1:])
