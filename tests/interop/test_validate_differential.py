"""A sample of the differential test of `graft validate` against
TensorFlow's importer (tests/interop/validate_differential.py; the full
1,000-graph run and its numbers are in docs/reliability.md)."""
from conftest import graft_binary
from validate_differential import run


def test_validate_agrees_with_tensorflow_on_mutated_graphs():
    cases, by_kind, disagreements, _ = run(80, 7, graft_binary())
    assert len(cases) == 80
    assert len(by_kind) >= 8, by_kind  # the sample covers most mutations
    assert disagreements == [], disagreements[:5]
