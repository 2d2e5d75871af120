"""`import graft` tests: the package staged by scripts/build_wheel.sh in
build/python (the test command builds it first)."""
import glob
import os
import subprocess
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGED = os.path.join(ROOT, "build", "python")
if not os.path.exists(os.path.join(STAGED, "graft", "_graft.so")):
    raise RuntimeError("build/python/graft is not staged: run scripts/build_wheel.sh")
sys.path.insert(0, STAGED)
# Child processes (import-order checks, process pools, Dask workers) import
# the same package.
os.environ["PYTHONPATH"] = STAGED + os.pathsep + os.environ.get("PYTHONPATH", "")


def repo_path(*parts):
    return os.path.join(ROOT, *parts)


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
