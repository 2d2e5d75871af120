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


def test_ablation_times_the_pipeline_against_itself_without_rules():
    """`--skip-rules 'rotary_*'`: LLaMA's TorchScript export with its rotary
    embeddings fused and not, timed together; the one without them keeps
    more nodes, both compute the export's outputs."""
    proc = subprocess.run([sys.executable, repo_path("tests", "interop", "bench_zoo_latency.py"),
                           "llama@ts17", "--skip-rules", "rotary_*", "--rounds", "1"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in proc.stdout.splitlines()
            if line.startswith("| llama@ts17 ")]
    assert len(rows) == 1, proc.stdout
    _, nodes, have, lack, ratios, diff = rows[0]
    with_rules, without = map(int, nodes.split(" / "))
    assert with_rules < without, nodes
    have, lack, ratios = ([float(x) for x in cell.split(", ")] for cell in (have, lack, ratios))
    assert all(t > 0 for t in have + lack), proc.stdout
    for a, b, r in zip(have, lack, ratios):
        assert abs(r - b / a) < 0.01, proc.stdout
    assert float(diff) <= 1e-4, proc.stdout
