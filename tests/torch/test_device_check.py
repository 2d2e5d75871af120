"""scripts/device_check.sh --dry-run: the device check runs end to end on
CPU with tiny models, and what it measures holds together."""
import json
import os
import subprocess

from conftest import repo_path


def test_device_check_dry_run(tmp_path):
    proc = subprocess.run([repo_path("scripts", "device_check.sh"), "--dry-run"],
                          env=dict(os.environ, OUT=str(tmp_path)), capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.load(open(tmp_path / "partitions.json"))
    assert {r["model"] for r in rows} == {"resnet18", "gpt"}
    for model in ("resnet18", "gpt"):
        default = next(r for r in rows if r["model"] == model and r["partitioner"] == "default")
        # torch's default partition is the reference: it runs and its
        # gradients are eager's.
        assert default["grads_equal"] and default["saved_mib"] > 0 and default["backward_flops"] > 0
        for r in rows:
            if r["model"] == model and "error" not in r:
                # A smaller budget never saves more than the default partition.
                assert r["saved_mib"] <= default["saved_mib"] + 1e-9
