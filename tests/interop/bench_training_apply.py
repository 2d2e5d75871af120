"""Benchmark (prints numbers; not a test): how long graft apply takes to
rewrite the training graphs of tests/interop/test_checkpoint.py with the
checkpoint library (`memory`) and the swap library (defaults, unplaced ops
on the accelerator), beside Grappler's memory optimizer on the same graph in
the same run (RECOMPUTATION_HEURISTICS and SWAPPING_HEURISTICS, as the
Grappler comparisons of test_checkpoint.py and test_swap.py run it). Each
time is the median of RUNS; graft's is its report's `apply_ms` (reading and
writing the graph left out, as Grappler's excludes them), with each rule's
share.

  .venv/bin/python tests/interop/bench_training_apply.py [RUNS]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import graft_binary, repo_path  # noqa: E402
from test_checkpoint import MEMORY_MODELS, grappler_memory, grappler_recompute  # noqa: E402

GPU = "/device:GPU:0"
LIBRARIES = {  # name: (rule file, graft apply's options, Grappler's pass)
    "checkpoint memory": ("checkpoint", [], grappler_recompute),
    "swap": ("swap", ["--device-default", GPU],
             lambda g: grappler_memory(g, "SWAPPING_HEURISTICS", device=GPU, prune=False)),
}


def graft_apply(src, rules, options, tmp):
    """graft apply's report: its apply time and each rule's."""
    out, report = os.path.join(tmp, "out.pb"), os.path.join(tmp, "report.json")
    proc = subprocess.run([graft_binary(), "apply", "-q", "-r", repo_path("rules", "tf", rules + ".graft"),
                           src, "-o", out, "--report", report, *options],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(proc.stderr)
    with open(report) as f:
        return json.load(f)


def measure(graph_def, library, runs, tmp):
    """graft's median apply time (ms), each rule's, the rewrites each made
    (from the first run) and Grappler's median pass time on `graph_def`."""
    rules, options, grappler = LIBRARIES[library]
    src = os.path.join(tmp, "in.pb")
    with open(src, "wb") as f:
        f.write(graph_def.SerializeToString())
    reports = [graft_apply(src, rules, options, tmp) for _ in range(runs)]
    rule_names = [r["name"] for r in reports[0]["rules"]]
    return {
        "graft_ms": statistics.median(r["apply_ms"] for r in reports),
        "rule_ms": {name: statistics.median(rule["time_ms"] for r in reports for rule in r["rules"]
                                            if rule["name"] == name) for name in rule_names},
        "applied": {rule["name"]: int(rule["applied"]) for rule in reports[0]["rules"]},
        "grappler_ms": statistics.median(1000 * grappler(graph_def)[1] for _ in range(runs)),
    }


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print("graft binary: %s; median of %d runs" % (graft_binary(), runs))
    print("| graph | library | graft apply | its rules | Grappler's pass | Grappler / graft |")
    print("|---|---|---:|---|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("dense_chain_100", "cifar_resnet_50"):
            original = MEMORY_MODELS[name]().as_graph_def()
            for library in LIBRARIES:
                m = measure(original, library, runs, tmp)
                print("| %s | %s | %.1f ms | %s | %.1f ms | %.1fx |" % (
                    name, library, m["graft_ms"],
                    ", ".join("%s %.1f" % kv for kv in m["rule_ms"].items()), m["grappler_ms"],
                    m["grappler_ms"] / m["graft_ms"]))


if __name__ == "__main__":
    main()
