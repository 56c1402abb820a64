"""The one-pass GPU statistics decide exactly what the operator path decides.

The kernels run on an NVIDIA GPU only (skipped elsewhere, with the reason); that NVRTC builds them
is checked wherever NVRTC is installed, GPU or not.
"""

import pytest
import torch

from kforge_worker.checks import calibration, compare
from kforge_worker.exchange import device_compare

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the kernels run on a GPU")
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
N = device_compare.MIN_ELEMENTS + 12345  # above the threshold, and not a multiple of a block


def test_kernels_build_with_nvrtc(tmp_path, monkeypatch):
    from kforge_kernels import cuda
    try:
        cuda._get_nvrtc()
    except Exception as exc:
        pytest.skip(f"NVRTC is not installed here: {exc}")
    monkeypatch.setenv("KFORGE_BUILD_CACHE", str(tmp_path))
    monkeypatch.setenv("KFORGE_COMPILE_ONLY", "1")
    module = cuda.compile(device_compare.SOURCE, name="kforge_device_compare", arch_override="sm_90")
    for name in ("stats_f32", "stats_16", "scaled_f32", "scaled_16"):
        assert module.kernel(name).params, name


def test_host_tensors_take_the_operator_path():
    x = torch.randn(N)
    assert not device_compare.usable(x, x.clone())


def _operator_stats(e: torch.Tensor, g: torch.Tensor, tol: float):
    """What compare's operator path computes, step by step as it does."""
    e, g = e.float(), g.float()
    err = torch.sub(g, e).abs_()
    ea = e.abs().clamp_min_(torch.finfo(torch.float32).tiny)
    threshold = torch.mul(ea, tol).add_(tol)
    return (float(err.max()), float(torch.div(err, ea).max()), int(torch.count_nonzero(err > threshold)),
            float((e.double() ** 2).sum()))


def _pair(dtype, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    e = torch.randn(N, device="cuda", generator=gen).to(dtype)
    noise = torch.randn(N, device="cuda", generator=gen) * (1e-5 if dtype == torch.float32 else 1e-3)
    return e, (e.float() * (1 + noise)).to(dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_statistics_match_the_operator_path(dtype):
    e, g = _pair(dtype)
    tol = compare.tolerance_for(dtype)
    g[::1000] += 1.0  # some elements far outside
    assert device_compare.usable(e, g), device_compare.unavailable_reason()
    fast = device_compare.stats(e, g, tol)
    max_abs, max_rel, over, sumsq = _operator_stats(e, g, tol)
    assert (fast.max_abs, fast.max_rel, fast.over, fast.nonfinite) == (max_abs, max_rel, over, 0)
    assert fast.sum_squares == pytest.approx(sumsq, rel=1e-9)


@needs_gpu
def test_elements_on_the_threshold_are_decided_as_the_operator_path_does():
    tol = 1e-4
    e = torch.rand(N, device="cuda") + 0.5
    threshold = torch.mul(e.abs(), tol).add_(tol)
    g = e + threshold  # rounding puts each one just inside or just outside
    g[1::2] = torch.nextafter(g[1::2], torch.full_like(g[1::2], float("inf")))
    fast = device_compare.stats(e, g, tol)
    expected = _operator_stats(e, g, tol)[2]
    assert 0 < expected < N and fast.over == expected


@needs_gpu
def test_non_finite_values_are_counted_and_left_to_the_operator_path():
    e, g = _pair(torch.float32)
    g[7] = float("nan")
    e[9] = float("inf")
    assert device_compare.stats(e, g, 1e-4).nonfinite == 2
    with pytest.raises(compare.Mismatch) as info:
        compare.compare(e, g)
    assert info.value.report["reason"] == "nonfinite"


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_compare_and_the_tightened_check_agree_with_and_without_the_kernels(dtype, monkeypatch):
    e, g = _pair(dtype, seed=1)
    bad = g.clone()
    bad[12345] += 0.5
    outcomes = []
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(device_compare, "usable", lambda *a: False)
        passing = compare.compare(e, g)
        with pytest.raises(compare.Mismatch) as info:
            compare.compare(e, bad)
        identical = compare.compare(e, e.clone())
        outcomes.append((passing["max_abs_error"], passing["max_rel_error"], passing["identical"],
                         info.value.report["mismatched"], info.value.report["index"], identical["identical"],
                         calibration.scaled_check(e, g), calibration.scaled_check(e, bad) is not None,
                         calibration.scaled_check(e, torch.zeros_like(e)) is not None))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][2] is False and outcomes[0][5] is True and outcomes[0][7] and outcomes[0][8]
