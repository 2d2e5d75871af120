"""PyTorch tests of graft (graft.torch, graft.aten, the device check's dry
run) against the staged package in build/python (scripts/build_wheel.sh).
They run in their own process, apart from tests/python: torch.export and
TensorFlow in one process abort (their bundled LLVMs register the same
options), with or without graft."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from staged_graft import ROOT, repo_path  # noqa: E402,F401
