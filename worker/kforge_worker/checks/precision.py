"""Precision audit: the candidate against a float64 reference, next to the fp32 reference's own error.

Passing the tolerance is not enough in ``strict`` precision: a kernel that silently computes in
bfloat16 or on a subsample can stay inside atol on small outputs. Per output tensor, with r64 the
reference computed in float64 and r the reference in its own dtype:

    err(x)  = max |x - r64|
    limit   = K * err(r) + ULPS * eps(dtype) * max |r64|

and the candidate must satisfy err(candidate) <= limit. The floor of a few ulp of the output's
magnitude keeps exact operations (ReLU, max), whose fp32 reference error is zero, from failing on
rounding. ``relaxed`` precision reports the same numbers without failing on them (TF32, bf16 and
fp16 inside the kernel are then allowed within the stated tolerance).
"""

import copy
import math
from typing import Optional

import torch

from kforge_worker.checks import compare
from kforge_worker.checks.runtime_checks import _leaves

K = 16.0   # how much worse than the fp32 reference's own error an honest reordering may be
ULPS = 8.0


def _double(obj):
    if isinstance(obj, torch.Tensor):
        return obj.double() if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(_double(x) for x in obj)
    return obj


def float64_model(model):
    """A float64 copy of the reference model (made once per model: its weights never change)."""
    return copy.deepcopy(model).double()


def float64_outputs(model64, inputs, on_device: bool = False):
    """The reference computed in float64, or None where the model cannot run in float64. ``inputs``
    are not changed: the model gets float64 copies. The results go to the host unless ``on_device``
    and the device has room for the audit's float64 work beside them (audit_device)."""
    try:
        with torch.no_grad():
            out = model64(*_double(list(inputs)))
        return [t.detach() if on_device and audit_device(t).type != "cpu" else t.detach().cpu() for t in _leaves(out)]
    except Exception:
        return None


# The audit works through outputs in flat chunks of this many elements, so its float64 work beside
# the output is a few chunks (256 MiB of float64 each), not copies of the whole output: a 6 GiB output
# is audited on the device where whole float64 copies would not fit beside the trial.
CHUNK_ELEMENTS = 1 << 25


def audit_device(t: torch.Tensor) -> torch.device:
    """Where the audit of an output like ``t`` runs: its device when that has free memory for a few
    float64 chunks of it (a chunk of the candidate, its difference, a mask), otherwise the host."""
    if not t.is_cuda:
        return torch.device("cpu")
    free, _ = torch.cuda.mem_get_info(t.device)
    return t.device if free > 4 * 8 * min(t.numel(), CHUNK_ELEMENTS) else torch.device("cpu")


def _chunks(*tensors):
    """Matching flat slices of same-shaped tensors, CHUNK_ELEMENTS at a time (on the host at most
    compare.HOST_SLICE), in logical order."""
    flat = [t.reshape(-1) for t in tensors]
    step = compare.slice_elements(flat[0].device, CHUNK_ELEMENTS)
    for start in range(0, flat[0].numel(), step):
        yield [f[start:start + step] for f in flat]


class Float64Reference:
    """Per output, everything the audit needs from the reference alone: the float64 result, whether
    all of it is finite, the fp32 reference's own error against it and the limit. Built once per
    audited trial; where every float64 value is finite (the usual case) nothing is masked."""

    def __init__(self, reference_outputs, outputs64):
        self.entries = []
        for i, (r, r64) in enumerate(zip(_leaves(reference_outputs), outputs64 or [])):
            if not r.is_floating_point() or r.numel() == 0 or r.dtype == torch.float64 and r64.dtype != torch.float64:
                continue
            # One pass for both: a NaN or an infinity anywhere shows in the smallest or largest value.
            low, high = _value_range(r64)
            all_finite = math.isfinite(low) and math.isfinite(high)
            if not all_finite:
                if not any(bool(torch.isfinite(c).any()) for (c,) in _chunks(r64)):
                    continue
                low, high = _finite_range(r64)
            err_ref = _max_error(r, r64, all_finite)
            floor = ULPS * torch.finfo(r.dtype).eps * max(-low, high)
            self.entries.append({"output": i, "reference": r, "r64": r64, "all_finite": all_finite,
                                 "err_ref": err_ref, "limit": K * err_ref + floor})


def _value_range(r64: torch.Tensor):
    """min and max of r64 (NaN where it holds one), chunk by chunk."""
    return _range(c for (c,) in _chunks(r64))


def _finite_range(r64: torch.Tensor):
    """min and max of r64's finite entries, with 0 among them (for an r64 where some are not finite)."""
    return _range(c.double().masked_fill(~torch.isfinite(c), 0) for (c,) in _chunks(r64))


def _range(chunks):
    low = high = None
    for c in chunks:
        lo, hi = torch.aminmax(c)
        low = lo if low is None else torch.minimum(low, lo)
        high = hi if high is None else torch.maximum(high, hi)
    return float(low), float(high)


def _max_error(x: torch.Tensor, r64: torch.Tensor, all_finite: bool) -> float:
    """max |x - r64| in float64, over the entries where r64 is finite; on r64's device, chunk by
    chunk. A non-finite x where r64 is finite gives inf or nan, which fails the audit."""
    worst = None
    for xc, rc in _chunks(x, r64):
        diff = torch.sub(xc.to(rc.device), rc.double()).abs_()  # in float64 by promotion: no float64 copy of x
        if not all_finite:
            diff.masked_fill_(~torch.isfinite(rc), 0)
        m = diff.max()
        worst = m if worst is None else torch.maximum(worst, m)
    return float(worst)


def _identical(a: torch.Tensor, b: torch.Tensor) -> bool:
    """torch.equal, chunk by chunk (no whole-output comparison mask)."""
    if a.device != b.device or a.dtype != b.dtype or a.shape != b.shape:
        return False
    return all(torch.equal(ac, bc) for ac, bc in _chunks(a, b))


def ready_device(device: torch.device) -> None:
    """An audit of a small output on ``device``, for a worker's warm-up: the kernels it launches
    are loaded before a trial's audit needs them."""
    reference = torch.linspace(-1, 1, 64, device=device)
    audit(reference, reference + 1e-7, [reference.double()], "strict")


def audit(reference_outputs, candidate_outputs, outputs64, policy: str) -> Optional[dict]:
    """Worst ratio of the candidate's error to its limit over all outputs; None when not applicable.
    ``outputs64``: float64_outputs() or a Float64Reference built from them."""
    if outputs64 is None:
        return None
    ref64 = outputs64 if isinstance(outputs64, Float64Reference) else Float64Reference(reference_outputs, outputs64)
    candidates = _leaves(candidate_outputs)
    worst = None
    for e in ref64.entries:
        if e["output"] >= len(candidates):
            continue
        c = candidates[e["output"]]
        if _identical(c, e["reference"]):
            err_cand = e["err_ref"]  # bit-identical to the reference: the same error, nothing to measure
        else:
            err_cand = _max_error(c, e["r64"], e["all_finite"])
        limit = e["limit"]
        ratio = err_cand / limit if limit > 0 else (0.0 if err_cand == 0 else float("inf"))
        entry = {"output": e["output"], "candidate_error": err_cand, "reference_error": e["err_ref"], "limit": limit,
                 "ratio": ratio, "k": K, "ulps": ULPS}
        if worst is None or ratio > worst["ratio"]:
            worst = entry
    if worst is None:
        return None
    worst["policy"] = policy
    worst["verdict"] = "pass" if worst["ratio"] <= 1.0 else ("fail" if policy == "strict" else "warn")
    return worst
