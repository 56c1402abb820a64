"""Null-kernel calibration: can a kernel that does no real work pass this problem's check?

Before a problem's tolerance is trusted, built-in null candidates are checked against the reference's
own outputs, inside the reference process: zeros, a constant, an input passed through, the
reference's output for inputs drawn from another seed, and the reference computed in bfloat16. If
any passes, the check is tightened for this problem (absolute tolerance scaled to the output's RMS
magnitude, more trials, a size variant) and the nulls are checked again under the tightened rule.
A reference whose output does not depend on its inputs is degenerate: a constant is then the right
answer, and the report says so.
"""

import copy
import math
from typing import Callable, Dict, List, Optional, Tuple

import torch

from kforge_worker.checks import compare
from kforge_worker.exchange import device_compare
from kforge_worker.checks.runtime_checks import _leaves

NULLS = ["zeros", "constant", "passthrough", "other_seed", "low_precision"]
# Extra correctness trials when the check is tightened, and the most any run gets.
EXTRA_TRIALS = 5
MAX_TRIALS = 20


def _map(obj, fn):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


# Elements per slice of the tightened check: its temporaries stay small beside outputs of any size.
SCALED_CHECK_SLICE = 1 << 24


def scaled_check(expected, got) -> Optional[str]:
    """The tightened rule: |got - expected| <= tol * |expected| + tol * min(1, rms(expected)), per tensor.

    Scaling the absolute term to the output's magnitude stops zeros and constants from passing on
    outputs far smaller than the default absolute tolerance; relative error is judged as before.
    Computed where the comparison runs (on the GPU for a GPU's outputs), a slice at a time, in
    compare's working precision (float32, float64 for float64 outputs): the difference of two close
    float32 values is exact there, and the RMS only sets the scale of the absolute term. Outputs
    compare.compare found identical pass it without being read again (its callers skip it).
    """
    for i, (e, g) in enumerate(zip(_leaves(expected), _leaves(got))):
        if not e.is_floating_point() or e.numel() == 0:
            continue
        tol = compare.tolerance_for(e.dtype)
        if device_compare.usable(e, g):
            fast = device_compare.stats(e, g, tol)
            if fast is not None and not fast.nonfinite:  # the RMS of all elements, summed in float64 where they lie
                rms = (fast.sum_squares / e.numel()) ** 0.5
                bad_count = device_compare.scaled_over(e, g, tol, tol * min(1.0, rms))
                if bad_count is not None:  # None: the kernel could not run, the operator path decides
                    if bad_count:
                        return _scaled_failure(i, bad_count, e.numel(), tol, rms, fast.max_abs)
                    continue
        dev = compare._work_device(e, g)
        work = torch.float64 if e.dtype == torch.float64 else torch.float32
        e_flat, g_flat = e.detach().reshape(-1), g.detach().reshape(-1)
        step = compare.slice_elements(dev, SCALED_CHECK_SLICE)
        slices = range(0, e_flat.numel(), step)

        def part(flat, start):
            return flat[start:start + step].to(dev, work)

        rms, finite = _finite_rms(lambda: (part(e_flat, start) for start in slices))
        if rms is None:
            continue
        atol = tol * min(1.0, rms)
        bad = torch.zeros((), dtype=torch.int64, device=dev)  # accumulated where the comparison runs
        worst = torch.zeros((), dtype=work, device=dev)
        for start in slices:
            es, gs = part(e_flat, start), part(g_flat, start)
            err = torch.sub(gs, es).abs_()
            threshold = es.abs().mul_(tol).add_(atol)
            if not finite:  # no error where the reference is not finite
                err.masked_fill_(~torch.isfinite(es), 0)
            bad += torch.count_nonzero(torch.gt(err, threshold))
            worst = torch.maximum(worst, err.max())
            del err, threshold
        bad_count, max_err = int(bad), float(worst)
        if bad_count:
            return _scaled_failure(i, bad_count, e.numel(), tol, rms, max_err)
    return None


def _scaled_failure(output: int, bad: int, elements: int, tol: float, rms: float, max_err: float) -> str:
    return (f"output {output}: {bad} of {elements} elements outside the magnitude-scaled tolerance "
            f"(rtol={tol:g}, atol={tol * min(1.0, rms):.3g} = rtol x output RMS {rms:.3g}); max abs error "
            f"{max_err:.3e}")


def _finite_rms(parts: Callable) -> Tuple[Optional[float], bool]:
    """(the RMS of the finite entries of the tensors ``parts()`` yields, one slice at a time, or None
    where there are none; whether every entry is finite). The norm of each slice, one reduction,
    summed where the slices lie and read back once; where that sum is not finite (a NaN or Inf
    propagates into it, or the squares of large values overflow), the finite entries are counted and
    summed apart, in float64."""
    total, count = None, 0
    for p in parts():
        square = torch.linalg.vector_norm(p).double().square()
        total = square if total is None else total + square
        count += p.numel()
    if count and math.isfinite(float(total)):
        return (float(total) / count) ** 0.5, True
    squares, count = 0.0, 0
    for p in parts():
        finite = torch.isfinite(p)
        squares += float(torch.where(finite, p.double(), 0).pow_(2).sum())
        count += int(finite.sum())
    return ((squares / count) ** 0.5 if count else None), False


def _passes(expected, got, tightened: bool) -> bool:
    try:
        stats = compare.compare(expected, got)
    except (compare.Mismatch, Exception):
        return False
    return not tightened or stats["identical"] or scaled_check(expected, got) is None


def _nulls(model, inputs, outputs, other_inputs, other_outputs) -> Dict[str, Callable[[], object]]:
    def constant_other():
        flat = iter(_leaves(other_outputs))
        return _map(outputs, lambda t: torch.full_like(t, float(next(flat).float().mean())) if t.is_floating_point()
                    else torch.zeros_like(t))

    def passthrough():
        flat_in = [x for x in _leaves(list(inputs))]
        return _map(outputs, lambda t: next((x.clone() for x in flat_in if x.shape == t.shape and x.dtype == t.dtype),
                                            torch.zeros_like(t)))

    def low_precision():
        low = copy.deepcopy(model).to(torch.bfloat16)
        lowered = _map(list(inputs), lambda t: t.to(torch.bfloat16) if t.is_floating_point() else t)
        with torch.no_grad():
            out = low(*lowered)
        return _map(out, lambda t: t.to(torch.float32) if t.is_floating_point() else t)

    return {"zeros": lambda: _map(outputs, torch.zeros_like), "constant": constant_other,
            "passthrough": passthrough, "other_seed": lambda: other_outputs, "low_precision": low_precision}


def calibrate(model, draw, seed_of, forward) -> dict:
    """Runs the nulls; returns the report (which passed, whether the check was tightened, degeneracy).
    ``draw(seed)``: a set of inputs, drawn where the trials' inputs are (on the GPU, for a GPU whose
    trials stay there: drawing gigabytes on the host takes seconds); ``seed_of(k)``: the seed of the
    k-th draw of the trusted side's (ReferenceSession.trial_seed)."""
    draws = []
    for k in range(3):
        inputs = draw(seed_of(10_000 + k))
        draws.append((inputs, forward(inputs)))
    (inputs, outputs), (other_inputs, other_outputs) = draws[0], draws[1]
    report = {"nulls": {}, "tightened": False, "degenerate": False}
    # Degenerate: three different input draws give the same reference result (within tolerance).
    same = all(_passes(outputs, o, True) for _, o in draws[1:])
    if same:
        report["degenerate"] = True
        report["note"] = ("the reference's output does not depend on its inputs (three input draws give the same "
                          "result): a kernel returning that constant is correct for this problem")
    nulls = _nulls(model, inputs, outputs, other_inputs, other_outputs)
    results = {}
    for name, make in nulls.items():
        try:
            got = make()
        except Exception as exc:
            results[name] = {"passes": False, "skipped": f"{type(exc).__name__}: {exc}"[:200]}
            continue
        results[name] = {"passes": _passes(outputs, got, False), "_got": got}
    passing = [n for n, r in results.items() if r["passes"]]
    if passing and not report["degenerate"]:
        report["tightened"] = True
        report["actions"] = ["absolute tolerance scaled to each output's RMS magnitude",
                             f"{EXTRA_TRIALS} more correctness trials (at most {MAX_TRIALS})",
                             "one size variant checked when none was asked for"]
        for name in passing:
            results[name]["passes_tightened"] = _passes(outputs, results[name]["_got"], True)
        still = [n for n in passing if results[n]["passes_tightened"]]
        report["still_passing"] = still
    for r in results.values():
        r.pop("_got", None)
    report["nulls"] = results
    report["passing"] = passing
    report["output_rms"] = [float(t.detach().double().pow(2).mean().sqrt()) if t.is_floating_point() and t.numel()
                            else None for t in _leaves(outputs)]
    return report


def summary(report: dict) -> str:
    if report.get("degenerate"):
        return "degenerate: " + report.get("note", "")
    if not report.get("passing"):
        return "no null kernel passes the default check"
    text = f"null kernels passing the default check: {', '.join(report['passing'])}; check tightened"
    if report.get("still_passing"):
        text += f" (still passing after tightening: {', '.join(report['still_passing'])})"
    return text
