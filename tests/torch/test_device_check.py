"""scripts/device_check.sh --dry-run: the device check runs end to end on
CPU with tiny models, and what it measures holds together: torch's default
partition is eager's, and graft's partition is correct on every model and
budget, within its budget (or saving the least it can, said so), never
beaten by torch's budget partitioner on both saved bytes and backward
FLOPs, and near the optimum under its own rules."""
import json
import os
import subprocess

from conftest import repo_path

MODELS = {"resnet18", "gpt2", "llama", "unet"}


def test_device_check_dry_run(tmp_path):
    proc = subprocess.run([repo_path("scripts", "device_check.sh"), "--dry-run"],
                          env=dict(os.environ, OUT=str(tmp_path)), capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.load(open(tmp_path / "partitions.json"))
    rows, verdicts = result["rows"], result["verdicts"]
    assert {r["model"] for r in rows} == MODELS
    for model in MODELS:
        default = next(r for r in rows if r["model"] == model and r["partitioner"] == "default")
        # torch's default partition is the reference: it runs and its
        # gradients are eager's.
        assert default["grads_equal"] and default["saved_mib"] > 0 and default["backward_flops"] > 0
        for r in rows:
            if r["model"] == model and "error" not in r:
                # A smaller budget never saves more than the default partition.
                assert r["saved_mib"] <= default["saved_mib"] * 1.05 + 1e-9, r
        graft_rows = [r for r in rows if r["model"] == model and r["partitioner"] == "graft"]
        assert graft_rows and all("error" not in r and r["grads_equal"] and r["buffers_equal"]
                                  and "fallback" not in r for r in graft_rows), graft_rows
        # swap (host tensors swapped here, so that the rewrite runs): correct,
        # what stays on the device within budget, no matrix FLOPs recomputed
        swap_rows = [r for r in rows if r["model"] == model and r["partitioner"] == "graft_swap"]
        assert swap_rows and all("error" not in r and r["grads_equal"] and r["buffers_equal"]
                                 and r["budget_met"] and r["recomputed_flops"] == 0
                                 and r["saved_mib"] <= r["budget"] * default["saved_mib"] * 1.05
                                 for r in swap_rows), swap_rows
        assert any(r["swapped_mib"] > 0 for r in swap_rows), swap_rows
    assert len(verdicts) == len([r for r in rows if r["partitioner"] == "graft"])
    for v in verdicts:
        assert v["within_budget"] and v["grads_equal"] and not v["torch_dominates"], v
        # the optimum under the same rules (a MILP) recomputes at most 5% less
        assert v["milp_status"] in ("optimal", "least") and v["flops_over_milp"] <= 1.05, v
