"""`import graft` tests: the package staged by scripts/build_wheel.sh in
build/python (the test command builds it first)."""
import glob
import os
import subprocess
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from staged_graft import ROOT, STAGED, repo_path  # noqa: E402,F401  (child processes too)


@pytest.fixture(scope="session")
def wheel_venv(tmp_path_factory):
    """The wheel (build/wheel, written by scripts/build_wheel.sh) installed
    into a fresh virtual environment: (its python, its site-packages)."""
    wheels = glob.glob(os.path.join(ROOT, "build", "wheel", "graft-*.whl"))
    assert len(wheels) == 1, wheels
    venv = tmp_path_factory.mktemp("wheel") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    wheels[0]], check=True)
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return python, site
