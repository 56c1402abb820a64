import pytest
import torch

from kforge_worker.checks import compare


def test_identical_tensors_pass_with_zero_error():
    x = torch.randn(4, 5)
    stats = compare.compare(x, x.clone())
    assert stats["max_abs_error"] == 0
    assert stats["tolerances"]["output"]["atol"] == 1e-4


def test_error_within_tolerance_passes_and_is_reported():
    x = torch.ones(10)
    stats = compare.compare(x, x + 5e-5)
    assert stats["max_abs_error"] == pytest.approx(5e-5, rel=1e-2)


def test_mismatch_reports_index_shape_and_values():
    x = torch.zeros(3, 4)
    y = x.clone()
    y[2, 1] = 1.0
    with pytest.raises(compare.Mismatch) as info:
        compare.compare(x, y)
    report = info.value.report
    assert report["index"] == [2, 1]
    assert report["shape"] == [3, 4]
    assert report["max_abs_error"] == 1.0
    assert report["mismatched"] == 1


def test_nan_where_reference_is_finite_fails():
    with pytest.raises(compare.Mismatch) as info:
        compare.compare(torch.zeros(5), torch.tensor([0, 0, float("nan"), 0, 0]))
    assert info.value.report["reason"] == "nonfinite"
    assert info.value.report["index"] == [2]


def test_nan_matching_the_reference_passes():
    ref = torch.tensor([1.0, float("nan"), float("inf")])
    compare.compare(ref, ref.clone())


def test_shape_and_dtype_must_match():
    with pytest.raises(compare.Mismatch, match="shape"):
        compare.compare(torch.zeros(3), torch.zeros(4))
    with pytest.raises(compare.Mismatch, match="dtype"):
        compare.compare(torch.zeros(3), torch.zeros(3, dtype=torch.float64))


def test_half_precision_has_looser_tolerance():
    x = torch.ones(8, dtype=torch.float16)
    compare.compare(x, x + 0.005)
    with pytest.raises(compare.Mismatch):
        compare.compare(x.float(), x.float() + 0.005)


def test_integer_and_bool_outputs_must_match_exactly():
    compare.compare(torch.arange(5), torch.arange(5))
    with pytest.raises(compare.Mismatch):
        compare.compare(torch.arange(5), torch.arange(5) + torch.tensor([0, 0, 0, 1, 0]))
    with pytest.raises(compare.Mismatch):
        compare.compare(torch.tensor([True, False]), torch.tensor([True, True]))


def test_tuples_and_scalars():
    compare.compare((torch.ones(2), 3, 0.5), (torch.ones(2), 3, 0.5 + 1e-9))
    with pytest.raises(compare.Mismatch, match=r"output\[1\]"):
        compare.compare((torch.ones(2), 3), (torch.ones(2), 4))
    with pytest.raises(compare.Mismatch, match="expected 2 outputs"):
        compare.compare((torch.ones(2), 3), (torch.ones(2),))
    with pytest.raises(compare.Mismatch, match="expected a tensor"):
        compare.compare(torch.ones(2), [1.0, 1.0])


def test_bit_identical_outputs_skip_the_error_statistics_but_nan_does_not():
    x = torch.tensor([0.0, -0.0, 1.5, float("inf")])
    stats = compare.compare(x, torch.tensor([-0.0, 0.0, 1.5, float("inf")]))
    assert stats["max_abs_error"] == 0 and stats["elements"] == 4
    with pytest.raises(compare.Mismatch, match="NaN"):
        compare.compare(x, torch.tensor([0.0, 0.0, 1.5, float("nan")]))


def test_a_comparison_by_slices_reports_like_one_over_the_whole(monkeypatch):
    """Large outputs are compared a slice at a time: the count, the worst element and its index, and
    the error statistics are those of the whole tensor (the worst sits in a later, partial slice)."""
    e = torch.randn(5, 13)
    g = e.clone()
    g[1, 2] += 0.01
    g[4, 11] += 0.5  # the worst, in the last slice
    g[3, 0] = e[3, 0] * (1 + 1e-6)  # within tolerance

    def report():
        with pytest.raises(compare.Mismatch) as m:
            compare.compare(e, g)
        return m.value.report

    whole = report()
    monkeypatch.setattr(compare, "SLICE", 7)
    sliced = report()
    assert sliced == whole
    assert sliced["mismatched"] == 2 and sliced["index"] == [4, 11]
    assert sliced["max_abs_error"] == pytest.approx(0.5, rel=1e-5)
    monkeypatch.setattr(compare, "SLICE", 7)
    g[1, 2], g[4, 11] = e[1, 2], e[4, 11]
    assert compare.compare(e, g)["max_rel_error"] == pytest.approx(1e-6, rel=0.2)


def _rule_in_float64(e: torch.Tensor, g: torch.Tensor, tol: float):
    """KernelBench's rule written out directly, in float64, over the entries where the reference is finite."""
    e64, g64 = e.double(), g.double()
    finite = torch.isfinite(e64)
    err = (g64 - e64).abs().masked_fill(~finite, 0)
    bad = (err > tol + tol * e64.abs().masked_fill(~finite, 0)) & finite
    return int(bad.sum()), float(err.max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_the_check_counts_what_the_rule_written_in_float64_counts(dtype):
    """Near the threshold and far past it, with infinities and NaNs where the reference has them:
    the count and the largest error are those of the rule computed directly in float64."""
    gen = torch.Generator().manual_seed(3)
    e = torch.randn(4096, generator=gen).to(dtype)
    tol = compare.tolerance_for(dtype)
    scale = (torch.rand(4096, generator=gen) * 2).double()  # around the threshold: 0 to 2x of it
    g = (e.double() + torch.sign(torch.randn(4096, generator=gen)) * scale * (tol + tol * e.double().abs())).to(dtype)
    e[7], g[7] = float("inf"), float("inf")
    e[9], g[9] = float("nan"), float("nan")
    want_bad, want_max = _rule_in_float64(e, g, tol)
    assert want_bad > 100
    with pytest.raises(compare.Mismatch) as m:
        compare.compare(e, g)
    assert m.value.report["mismatched"] == want_bad
    assert m.value.report["max_abs_error"] == pytest.approx(want_max, rel=1e-6)


def test_all_finite_sees_every_kind_of_non_finite_value():
    assert compare.all_finite(torch.randn(1000))
    assert compare.all_finite(torch.empty(0)) and compare.all_finite(torch.arange(5))
    for bad in (float("nan"), float("inf"), float("-inf")):
        for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
            t = torch.randn(1000).to(dtype)
            t[517] = bad
            assert not compare.all_finite(t), (bad, dtype)
    assert not compare.all_finite(torch.tensor([1 + 1j, complex(float("nan"), 0)]))


def test_same_values_compares_bits():
    """An infinity replaced by the largest finite float is a change (a copy through nan_to_num made
    them equal); NaNs with the same bits are the same value."""
    a = torch.tensor([1.0, float("inf"), float("nan")])
    b = a.clone()
    assert compare.same_values(a, b) is None
    b[1] = torch.finfo(torch.float32).max
    assert compare.same_values(a, b) == "values"
    assert compare.same_values([a], (a.clone(),)) is None
