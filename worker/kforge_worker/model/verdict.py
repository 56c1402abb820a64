"""Whether a patched model computes what the original computes: KernelBench's tolerance against the
original's outputs, and the harness's precision audit (checks/precision.py, strict) against the same
model run in higher precision: float64 for a float32 model, float32 for a bfloat16 or float16 one.

In a low-precision model the audit decides alone. There the original's own rounding error against
the higher-precision model is larger than the tolerance: in a 16-layer bf16 decoder with random
weights, one RMSNorm that rounds once instead of twice moves a quarter of the logits by more than
atol = rtol = 0.01, so no honest kernel that rounds differently stays inside it. The audit accepts
an error up to 16 times the original's own plus 8 ulp of the output's magnitude, as for a problem."""

import itertools
from typing import Optional

import torch

from kforge_worker.checks import compare, precision
from kforge_worker.exchange.tensors import leaves

LOW = (torch.bfloat16, torch.float16)


def higher_precision(model: torch.nn.Module) -> torch.dtype:
    """The dtype the audit's reference model runs in."""
    floats = {t.dtype for t in itertools.chain(model.parameters(), model.buffers()) if t.is_floating_point()}
    return torch.float32 if floats & set(LOW) else torch.float64


def cast(obj, dtype: torch.dtype):
    """``obj`` with its floating tensors (in lists, tuples and dicts) in ``dtype``."""
    if isinstance(obj, torch.Tensor):
        return obj.to(dtype) if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(cast(x, dtype) for x in obj)
    if isinstance(obj, dict):
        return {k: cast(v, dtype) for k, v in obj.items()}
    return obj


def outputs_of(output) -> list:
    """The tensors of an output, in the order the audit pairs them."""
    return [t.detach() for t in leaves(output)]


def check(expected, got, reference, path: str = "output") -> dict:
    """The verdict's numbers for ``got`` against the original's ``expected`` and the higher-precision
    ``reference`` (outputs_of(), or None where the model could not run in it); raises
    compare.Mismatch when ``got`` fails."""
    low = any(t.is_floating_point() and t.dtype in LOW for t in leaves(expected))
    stats, outside = None, None
    try:
        stats = compare.compare(expected, got, path=path)
    except compare.Mismatch as e:
        # Shapes, dtypes, structure and non-finite values must match in every model.
        if not low or reference is None or e.report.get("reason") != "value":
            raise
        outside = str(e)
    audit = precision.audit(expected, got, reference, "strict") if reference is not None else None
    if audit is not None and audit["verdict"] != "pass":
        raise compare.Mismatch({"message": (
            f"{path}: error {audit['candidate_error']:.3g} against the model in higher precision, over the audit's "
            f"limit {audit['limit']:.3g} ({audit['k']:g} x the original's own {audit['reference_error']:.3g} "
            f"+ {audit['ulps']:g} ulp); the original's outputs differ by "
            + (f"{stats['max_abs_error']:.3g} at most" if stats else "more than the tolerance"))})
    result = {"audit": {k: audit[k] for k in ("candidate_error", "reference_error", "limit", "ratio")} if audit else None}
    if stats:
        result.update(max_abs_error=stats["max_abs_error"], max_rel_error=stats["max_rel_error"])
    else:
        result["outside_tolerance"] = outside[:300]  # reported; in a low-precision model the audit decides
    return result

