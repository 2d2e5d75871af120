"""The `import graft` package the test command stages in build/python
(scripts/build_wheel.sh), put first on sys.path and PYTHONPATH (child
processes import the same one); shared by tests/python and tests/torch."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGED = os.path.join(ROOT, "build", "python")
if not os.path.exists(os.path.join(STAGED, "graft", "_graft.so")):
    raise RuntimeError("build/python/graft is not staged: run scripts/build_wheel.sh")
sys.path.insert(0, STAGED)
os.environ["PYTHONPATH"] = STAGED + os.pathsep + os.environ.get("PYTHONPATH", "")


def repo_path(*parts):
    return os.path.join(ROOT, *parts)
