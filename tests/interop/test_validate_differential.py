"""A sample of the differential test of `graft validate` against
TensorFlow's importer (tests/interop/validate_differential.py; the full
1,000-graph run and its numbers are in docs/reliability.md)."""
import os
import subprocess

from conftest import graft_binary
from validate_differential import ROOT, run


def test_validate_agrees_with_tensorflow_on_mutated_graphs():
    cases, by_kind, disagreements, refused = run(80, 7, graft_binary())
    assert len(cases) == 80
    # The repository's graphs TensorFlow refuses as they are (shape
    # functions, a custom op): graft validate refuses each too.
    assert len(refused) >= 3, refused
    for path in refused:
        proc = subprocess.run([graft_binary(), "validate", os.path.join(ROOT, path)],
                              capture_output=True, text=True)
        assert proc.returncode == 1, (path, proc.stdout)
    assert len(by_kind) >= 8, by_kind  # the sample covers most mutations
    assert disagreements == [], disagreements[:5]
