"""`import graft` tests: the package staged by scripts/build_wheel.sh in
build/python (the test command builds it first)."""
import os
import sys

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
