"""The wheel installs into a fresh virtual environment (no network, no
build tree on its path) and folds the example model to the CLI's bytes."""
import glob
import os
import subprocess
import sys

from conftest import ROOT, repo_path


def test_wheel_in_a_fresh_venv(tmp_path):
    wheels = glob.glob(os.path.join(ROOT, "build", "wheel", "graft-*.whl"))
    assert len(wheels) == 1, wheels
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    wheels[0]], check=True)
    cli_out = tmp_path / "cli.pb"
    subprocess.run([repo_path("bazel-bin", "cli", "graft"), "apply", "-q", "--pipeline",
                    repo_path("rules", "pipelines", "inference.yaml"),
                    repo_path("examples", "keras_cnn.pb"), "-o", str(cli_out)], check=True)
    code = (
        "import sys, graft\n"
        "assert graft.__file__.startswith(sys.prefix), graft.__file__\n"
        "folded, report = graft.apply(sys.argv[1], pipeline='inference')\n"
        "folded.save(sys.argv[2])\n"
        "print(report['nodes_before'], report['nodes_after'])\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run([python, "-c", code, repo_path("examples", "keras_cnn.pb"),
                           str(tmp_path / "py.pb")], capture_output=True, text=True,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["68", "63"]
    assert (tmp_path / "py.pb").read_bytes() == cli_out.read_bytes()
