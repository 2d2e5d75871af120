"""A sample of tests/interop/bench_zoo_latency.py (its numbers are in
docs/benchmarks.md): one architecture exported at the working width, the
pipeline's output run in onnxruntime beside the export, the same outputs."""
import subprocess
import sys

from conftest import repo_path


def test_latency_bench_runs_one_model():
    proc = subprocess.run([sys.executable, repo_path("tests", "interop", "bench_zoo_latency.py"),
                           "t5_encoder"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split("|")[1:-1] for line in proc.stdout.splitlines()
            if line.startswith("| t5_encoder ")]
    assert len(rows) == 1, proc.stdout
    name, before, after, ratio, diff = (cell.strip() for cell in rows[0])
    assert float(before) > 0 and float(after) > 0
    assert abs(float(ratio) - float(before) / float(after)) < 0.01
    assert float(diff) <= 1e-4
