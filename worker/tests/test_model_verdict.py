"""The whole-model verdict: the tolerance against the original, and the precision audit against the
model in higher precision, which decides alone in a bf16 model (its own rounding error is larger
than the tolerance there)."""

import pytest
import torch

from kforge_worker.checks import compare
from kforge_worker.model import verdict


def truth(n=4096):
    torch.manual_seed(0)
    return torch.randn(n) * 4


def test_the_reference_runs_in_float32_for_a_bf16_model_and_float64_for_a_float32_one():
    assert verdict.higher_precision(torch.nn.Linear(4, 4).bfloat16()) == torch.float32
    assert verdict.higher_precision(torch.nn.Linear(4, 4)) == torch.float64
    assert verdict.cast([torch.ones(2), {"ids": torch.ones(2, dtype=torch.long)}], torch.float64)[1]["ids"].dtype == torch.long


def test_a_bf16_output_that_rounds_differently_is_outside_the_tolerance_and_passes_the_audit():
    t = truth()
    original = t.bfloat16()
    # Two ulp off where the original is half an ulp off: an honest kernel rounding in another order.
    honest = (t * (1 + 2 ** -6)).bfloat16()
    with pytest.raises(compare.Mismatch):
        compare.compare(original, honest)
    result = verdict.check(original, honest, [t])
    assert "outside_tolerance" in result and "max_abs_error" not in result
    assert 0 < result["audit"]["ratio"] <= 1 and result["audit"]["reference_error"] > 0


def test_a_bf16_output_that_computes_something_else_fails_the_audit():
    t = truth()
    with pytest.raises(compare.Mismatch, match="over the audit's limit"):
        verdict.check(t.bfloat16(), (t * 1.5).bfloat16(), [t])


def test_without_a_reference_in_higher_precision_the_tolerance_decides():
    t = truth()
    with pytest.raises(compare.Mismatch, match="outside tolerance|elements"):
        verdict.check(t.bfloat16(), (t * (1 + 2 ** -6)).bfloat16(), None)


def test_a_float32_output_must_stay_inside_the_tolerance_even_where_the_audit_would_pass():
    t = truth().double()
    original = t.float()
    off = (t * (1 + 1e-3)).float()  # outside atol = rtol = 1e-4
    with pytest.raises(compare.Mismatch):
        verdict.check(original, off, [t])
    close = (t * (1 + 1e-7)).float()
    result = verdict.check(original, close, [t])
    assert result["max_abs_error"] < 1e-4 and result["audit"]["ratio"] <= 1


def test_a_wrong_shape_fails_in_a_bf16_model_too():
    t = truth()
    with pytest.raises(compare.Mismatch, match="shape"):
        verdict.check(t.bfloat16(), t[:-1].bfloat16(), [t])
