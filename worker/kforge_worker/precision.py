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
from typing import Optional

import torch

from kforge_worker.runtime_checks import _leaves

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


def audit_device(t: torch.Tensor) -> torch.device:
    """Where the audit of an output like ``t`` runs: its device when that has free memory for about
    four float64 copies of it (the float64 result, a mask, the difference), otherwise the host."""
    if not t.is_cuda:
        return torch.device("cpu")
    free, _ = torch.cuda.mem_get_info(t.device)
    return t.device if free > 4 * 8 * t.numel() else torch.device("cpu")


class Float64Reference:
    """Per output, everything the audit needs from the reference alone: the float64 result (its
    non-finite entries zeroed), the fp32 reference's own error against it and the limit. Built once
    per audited trial; where every float64 value is finite (the usual case) nothing is masked, which
    saves four passes over the output."""

    def __init__(self, reference_outputs, outputs64):
        self.entries = []
        for i, (r, r64) in enumerate(zip(_leaves(reference_outputs), outputs64 or [])):
            if not r.is_floating_point() or r.numel() == 0 or r.dtype == torch.float64 and r64.dtype != torch.float64:
                continue
            finite = torch.isfinite(r64)
            if bool(finite.all()):
                finite, r64f = None, r64.double()
            elif bool(finite.any()):
                r64f = r64.double().masked_fill(~finite, 0)
            else:
                continue
            err_ref = _max_error(r, r64f, finite)
            low, high = torch.aminmax(r64f)
            floor = ULPS * torch.finfo(r.dtype).eps * max(-float(low), float(high))
            self.entries.append({"output": i, "reference": r, "r64f": r64f, "finite": finite, "err_ref": err_ref,
                                 "limit": K * err_ref + floor})


def _max_error(x: torch.Tensor, r64f: torch.Tensor, finite: Optional[torch.Tensor]) -> float:
    """max |x - r64f| in float64, over the entries where the float64 reference is finite (all where
    ``finite`` is None); on r64f's device."""
    diff = x.to(device=r64f.device, dtype=torch.float64, copy=True)
    if finite is not None:
        diff.masked_fill_(~finite, 0)
    return float(diff.sub_(r64f).abs_().max())


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
        if c.device == e["reference"].device and torch.equal(c, e["reference"]):
            err_cand = e["err_ref"]  # bit-identical to the reference: the same error, nothing to measure
        else:
            err_cand = _max_error(c, e["r64f"], e["finite"])
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
