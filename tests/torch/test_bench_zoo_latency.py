"""A sample of tests/interop/bench_zoo_latency.py (its numbers are in
docs/benchmarks.md): two architectures exported at the working width (by
the dynamo exporter, and by TorchScript's with dynamic shapes), the
pipeline's output, and with `skip_norms=false`, run in onnxruntime beside
the export, the same outputs."""
import subprocess
import sys

from conftest import repo_path


def test_latency_bench_runs_two_models():
    runs = ["t5_encoder", "bert@ts17-dynamic"]
    proc = subprocess.run([sys.executable, repo_path("tests", "interop", "bench_zoo_latency.py"),
                           ",".join(runs)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {cells[0].strip(): [c.strip() for c in cells[1:]]
            for cells in (line.split("|")[1:-1] for line in proc.stdout.splitlines())
            if cells and cells[0].strip() in runs}
    assert sorted(rows) == sorted(runs), proc.stdout
    for name, (before, after, ratio, after_cpu, ratio_cpu, diff) in rows.items():
        assert float(before) > 0 and float(after) > 0 and float(after_cpu) > 0, name
        assert abs(float(ratio) - float(before) / float(after)) < 0.01, name
        assert abs(float(ratio_cpu) - float(before) / float(after_cpu)) < 0.01, name
        assert float(diff) <= 1e-4, name
