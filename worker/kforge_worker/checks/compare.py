"""Comparing a candidate's outputs with the reference's, element by element.

Tolerances start from KernelBench's (atol = rtol = 1e-4 for fp32, 1e-2 for fp16/bf16); a value
passes when |got - expected| <= atol + rtol * |expected|. Integer and boolean results must match
exactly. NaN and Inf must appear exactly where the reference has them.
"""

from typing import Optional

import torch

from kforge_worker.exchange import device_compare
from kforge_worker.measure import timed_reps

TOLERANCES = {
    torch.float64: 1e-7,
    torch.float32: 1e-4,
    torch.float16: 1e-2,
    torch.bfloat16: 1e-2,
}
DEFAULT_FLOAT_TOLERANCE = 1e-4
SLICE = 1 << 26  # elements compared at once on a GPU (256 MiB of float32 per temporary)
# On the host, 4 MiB temporaries stay in the caches and come back from the heap, where larger ones
# are fresh pages every time: a 64 MB check took 79 ms in 256 MiB slices, 18 ms in 4 MiB ones (2 cores).
HOST_SLICE = 1 << 20


def slice_elements(device: torch.device, on_device: int) -> int:
    """Elements a check takes at once on ``device``: ``on_device`` on an accelerator, at most
    HOST_SLICE on the host."""
    return on_device if device.type != "cpu" else min(on_device, HOST_SLICE)


def tolerance_for(dtype: torch.dtype) -> float:
    return TOLERANCES.get(dtype, DEFAULT_FLOAT_TOLERANCE)


class Mismatch(Exception):
    def __init__(self, report: dict):
        super().__init__(report.get("message", "mismatch"))
        self.report = report


def compare(expected, got, path: str = "output", tol_scale: float = 1.0) -> dict:
    """Returns error statistics for matching structures; raises Mismatch with a report otherwise.
    ``identical``: every value equal (torch.equal: a NaN never equals), which the checks after this
    one take from here instead of reading the outputs again."""
    stats = {"max_abs_error": 0.0, "max_rel_error": 0.0, "elements": 0, "tolerances": {}, "identical": True}
    _compare(expected, got, path, stats, tol_scale)
    return stats


def ready_device(device: torch.device) -> None:
    """A first comparison on ``device`` at a size that takes device_compare's kernels: built and
    loaded before a trial's check needs them."""
    values = torch.zeros(device_compare.MIN_ELEMENTS, device=device)
    compare(values, values.clone())


def _fail(path: str, reason: str, message: str, **details) -> None:
    raise Mismatch({"path": path, "reason": reason, "message": f"{path}: {message}", **details})


def _compare(expected, got, path, stats, tol_scale):
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            _fail(path, "type", f"expected a tensor, got {type(got).__name__}")
        _compare_tensors(expected, got, path, stats, tol_scale)
    elif isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            _fail(path, "type", f"expected a {type(expected).__name__} of {len(expected)}, got {type(got).__name__}")
        if len(got) != len(expected):
            _fail(path, "structure", f"expected {len(expected)} outputs, got {len(got)}")
        for i, (e, g) in enumerate(zip(expected, got)):
            _compare(e, g, f"{path}[{i}]", stats, tol_scale)
    elif isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            _fail(path, "structure", f"expected a dict with keys {sorted(expected)}")
        for k in expected:
            _compare(expected[k], got[k], f"{path}[{k!r}]", stats, tol_scale)
    elif isinstance(expected, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        tol = DEFAULT_FLOAT_TOLERANCE * tol_scale
        err = abs(got - expected)
        stats["identical"] = stats["identical"] and err == 0
        if not err <= tol + tol * abs(expected):
            _fail(path, "value", f"expected {expected!r}, got {got!r}", max_abs_error=err)
    else:
        if type(got) is not type(expected) or got != expected:
            _fail(path, "value", f"expected {expected!r}, got {got!r}")


def _index_tuple(flat_index: int, shape) -> list:
    index = []
    for dim in reversed(list(shape)):
        index.append(flat_index % dim if dim else 0)
        flat_index = flat_index // dim if dim else 0
    return list(reversed(index))


def _work_device(expected: torch.Tensor, got: torch.Tensor) -> torch.device:
    """Where to compute the error statistics: a process that already uses a GPU (the reference of a
    GPU target) compares large tensors there, two orders of magnitude faster than on the CPU."""
    for t in (expected, got):
        if t.is_cuda:
            return t.device
    if expected.numel() >= (1 << 16) and torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _compare_tensors(expected: torch.Tensor, got: torch.Tensor, path, stats, tol_scale):
    shape = list(expected.shape)
    if list(got.shape) != shape:
        _fail(path, "shape", f"shape {list(got.shape)}, expected {shape}", shape=list(got.shape), expected_shape=shape)
    if got.dtype != expected.dtype:
        _fail(path, "dtype", f"dtype {got.dtype}, expected {expected.dtype}".replace("torch.", ""))
    dev = _work_device(expected, got)
    exp = expected.detach().to(dev)
    out = got.detach().to(dev)
    stats["elements"] += exp.numel()
    if exp.numel() == 0:
        return
    if not exp.is_floating_point() and not exp.is_complex():
        diff = exp != out
        if bool(diff.any()):
            flat = int(diff.flatten().nonzero()[0])
            _fail(path, "value", f"{int(diff.sum())} of {exp.numel()} elements differ",
                  index=_index_tuple(flat, shape), shape=shape,
                  expected=exp.flatten()[flat].item(), got=out.flatten()[flat].item(),
                  mismatched=int(diff.sum()))
        return
    tol = tolerance_for(exp.dtype) * tol_scale
    stats["tolerances"][path] = {"atol": tol, "rtol": tol, "dtype": str(exp.dtype).replace("torch.", "")}
    if device_compare.usable(exp, out):
        # One pass over both on the GPU decides a passing pair; one that fails anywhere or holds a NaN
        # or an Inf goes on below, where the worst element is found and the non-finite values judged.
        fast = device_compare.stats(exp, out, tol)
        if fast is not None and not fast.nonfinite and not fast.over:
            stats["identical"] = stats["identical"] and fast.max_abs == 0
            stats["max_abs_error"] = max(stats["max_abs_error"], fast.max_abs)
            stats["max_rel_error"] = max(stats["max_rel_error"], fast.max_rel)
            return
    if torch.equal(exp, out):
        return  # bit-identical (NaN never equals itself, so NaNs take the full path): no error at all
    stats["identical"] = False
    # Work in float32 (float64 for float64 results): exact enough for the error statistics and
    # several times cheaper than upcasting everything to float64. A slice at a time, so that the
    # temporaries stay small beside outputs of several gigabytes on a GPU.
    work = torch.float64 if exp.dtype == torch.float64 else torch.float32
    finite = all_finite(exp) and all_finite(out)
    if not finite:
        _check_nonfinite(exp.to(work), out.to(work), path, shape)
    e_flat, g_flat = exp.reshape(-1), out.reshape(-1)
    max_abs = max_rel = 0.0
    count, worst, worst_at = 0, None, 0
    tiny = torch.finfo(work).tiny
    step = slice_elements(dev, SLICE)
    for start in range(0, e_flat.numel(), step):
        e = e_flat[start:start + step].to(work)
        g = g_flat[start:start + step].to(work)
        # Three temporaries of the slice's size and one mask: each is a pass over memory, and on the
        # host a fresh allocation's page faults cost as much as the arithmetic.
        abs_err = torch.sub(g, e).abs_()
        e_abs = e.abs().clamp_min_(tiny)  # tol * tiny vanishes beside tol: the threshold is unchanged
        if not finite:  # where the reference is not finite, _check_nonfinite has judged the value
            reference_finite = torch.isfinite(e)
            abs_err.masked_fill_(~reference_finite, 0)
            e_abs.masked_fill_(~reference_finite, 1)
        max_abs = max(max_abs, float(abs_err.max()))
        scratch = torch.div(abs_err, e_abs)
        max_rel = max(max_rel, float(scratch.max()))
        threshold = torch.mul(e_abs, tol, out=scratch).add_(tol)  # tol + tol * |e|
        bad = int(torch.count_nonzero(torch.gt(abs_err, threshold)))
        if bad:
            excess = abs_err.sub_(threshold)
            at = int(excess.argmax())
            if worst is None or float(excess[at]) > worst:
                worst, worst_at = float(excess[at]), start + at
            count += bad
        del abs_err, e_abs, scratch, threshold
    stats["max_abs_error"] = max(stats["max_abs_error"], max_abs)
    stats["max_rel_error"] = max(stats["max_rel_error"], max_rel)
    if count:
        flat = worst_at
        expected, got = e_flat[flat].to(work).item(), g_flat[flat].to(work).item()
        _fail(path, "value",
              f"{count} of {exp.numel()} elements outside tolerance (atol=rtol={tol:g}); "
              f"max abs error {max_abs:.3e}, worst at index {_index_tuple(flat, shape)}",
              index=_index_tuple(flat, shape), shape=shape, max_abs_error=max_abs, max_rel_error=max_rel,
              expected=expected, got=got, mismatched=count, atol=tol, rtol=tol)


def all_finite(t: torch.Tensor) -> bool:
    """Whether every element is finite: two reductions (the smallest and largest value; NaN
    propagates into both) instead of a mask of the whole tensor, which costs a pass and an
    allocation of its own."""
    if t.numel() == 0 or not (t.is_floating_point() or t.is_complex()):
        return True
    if t.is_complex():
        return bool(torch.isfinite(t).all())
    low, high = torch.aminmax(t)
    return bool(torch.isfinite(low)) and bool(torch.isfinite(high))


def _check_nonfinite(e: torch.Tensor, g: torch.Tensor, path: str, shape) -> None:
    """NaN and Inf must appear exactly where (and with the sign) the reference has them."""
    e_nan, g_nan = torch.isnan(e), torch.isnan(g)
    e_inf, g_inf = torch.isinf(e), torch.isinf(g)
    bad = (e_nan != g_nan) | (e_inf != g_inf) | (e_inf & (torch.sign(e) != torch.sign(g)))
    if bool(bad.any()):
        flat = int(bad.flatten().nonzero()[0])
        kind = "NaN" if bool(g_nan.flatten()[flat]) else "Inf" if bool(g_inf.flatten()[flat]) else "finite value"
        _fail(path, "nonfinite", f"{kind} at index {_index_tuple(flat, shape)} (expected {e.flatten()[flat].item()!r})",
              index=_index_tuple(flat, shape), shape=shape, got=g.flatten()[flat].item(),
              expected=e.flatten()[flat].item(), mismatched=int(bad.sum()))


def same_values(a, b) -> Optional[str]:
    """None when two results are bit-identical (NaNs equal where their bits are); otherwise where
    they first differ. Tensors are compared as their bits, in place (no copies)."""
    try:
        if isinstance(a, torch.Tensor):
            if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
                return "type/shape"
            if a.device != b.device:
                return "device"
            return None if timed_reps.same_bits(a, b) else "values"
        if isinstance(a, (list, tuple)):
            if len(a) != len(b):
                return "length"
            for i, (x, y) in enumerate(zip(a, b)):
                r = same_values(x, y)
                if r:
                    return f"[{i}] {r}"
            return None
        return None if a == b else "value"
    except Exception as exc:  # comparison of odd objects
        return str(exc)
