"""PyTorch tests of graft (graft.torch, graft.aten, the device check's dry
run) against the staged package in build/python (scripts/build_wheel.sh).
They run in their own process, apart from tests/python: torch.export and
TensorFlow in one process abort (their bundled LLVMs register the same
options), with or without graft."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGED = os.path.join(ROOT, "build", "python")
if not os.path.exists(os.path.join(STAGED, "graft", "_graft.so")):
    raise RuntimeError("build/python/graft is not staged: run scripts/build_wheel.sh")
sys.path.insert(0, STAGED)
os.environ["PYTHONPATH"] = STAGED + os.pathsep + os.environ.get("PYTHONPATH", "")


def repo_path(*parts):
    return os.path.join(ROOT, *parts)
