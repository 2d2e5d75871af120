"""A sample of the differential test of `graft validate` on ONNX models
against onnx.checker (tests/interop/validate_onnx_differential.py; the
full 1,000-model runs and their numbers are in docs/reliability.md)."""
from conftest import graft_binary
from validate_onnx_differential import KINDS, run


def test_validate_agrees_with_onnx_checker_on_mutated_models():
    cases, by_kind, disagreements, refused, bases, by_design = run(150, 7, graft_binary())
    assert len(cases) == 150 and bases > 1500
    assert len(by_kind) >= len(KINDS) - 2, by_kind  # the sample covers the mutations
    assert disagreements == [], disagreements[:5]
    # Differences by design stay few (shapes, element types the IR lacks).
    assert len(by_design) <= 5, by_design
