"""What the first prompt of ``kforge run`` states before any candidate exists: the device as kforge
measures it, PyTorch eager and ``torch.compile`` times of the reference with their spread, the speed
of light, and the reference's main computation (what the library-call rule looks at).

    python -m kforge_worker baseline PROBLEM --device D --threads N --reps R --cache PEAKS_DIR
        [--set N=V]... [--no-compile] [--precision strict|relaxed] --json FILE

The reference is trusted code (the file the reference worker runs). The times use the evaluator's
timers (timing.py: CUDA events on a cold L2, or the monotonic clock); every candidate's own
evaluation times both baselines again beside it, and those are the figures its verdict uses.
"""

import json
import statistics
import time
from pathlib import Path
from typing import List

import torch

from kforge_worker import backends
from kforge_worker.backends import cpu_facts
from kforge_worker.checks import compare, precision as precision_audit, sol, static_checks
from kforge_worker.common import ops, problem, session
from kforge_worker.exchange import tensors
from kforge_worker.measure import baselines
from kforge_worker.roles import reference
from kforge_worker.measure.timing import make_timer

WARMUP = 3


def spread(times_ms: List[float]) -> dict:
    """Median, quartiles and the interquartile range relative to the median, as the evaluator reports."""
    qs = statistics.quantiles(times_ms, n=4, method="inclusive") if len(times_ms) > 1 else [times_ms[0]] * 3
    median = statistics.median(times_ms)
    return {"median_ms": median, "p25_ms": qs[0], "p75_ms": qs[2], "min_ms": min(times_ms),
            "iqr_rel": (qs[2] - qs[0]) / median if median > 0 else 0.0, "reps": len(times_ms)}


def device_facts(device: str) -> dict:
    """Name, multiprocessors, memory and L2 (GPU), or model and threads (CPU)."""
    facts = {"kind": backends.kind_of(device), "name": backends.for_device(device).model_name(device),
             "threads": torch.get_num_threads()}
    if facts["kind"] == "cpu":
        facts.update(cpu_facts.cpu_facts())  # instruction sets and caches, for the generation prompt
    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(torch.device(device))
        facts.update({"sm_count": p.multi_processor_count, "memory_bytes": p.total_memory,
                      "l2_bytes": getattr(p, "L2_cache_size", 0), "compute_capability": f"{p.major}.{p.minor}"})
    return facts


def _time(fn, inputs: list, timer, reps: int) -> List[float]:
    def call():
        with torch.no_grad():
            fn(*inputs)

    for _ in range(WARMUP):
        call()
    return timer.measure(call, reps)


def measure(path: str, overrides: dict, device: str, reps: int, peaks_cache: str, compile_baseline: bool,
            precision: str) -> dict:
    session.set_precision(precision)
    module = problem.load_problem(path, overrides)
    seed = 1234
    session.seed_everything(seed)
    model = module.Model(*module.get_init_inputs()).to(device).eval()
    inputs = reference.draw_on_device(module, seed, device)
    out = {"device": device_facts(device), "precision": precision}
    peaks = sol.device_peaks(device, peaks_cache or None)
    out["peaks"] = {"flops_per_s": peaks["flops"], "bandwidth": peaks["bandwidth"],
                    "implausible": peaks.get("implausible", [])}
    try:
        out["main_computation"] = sorted(ops.main_computation(static_checks.reference_computations(Path(path).read_text())))
    except SyntaxError:
        out["main_computation"] = []
    timer = make_timer(device)
    out["timer"] = timer.info().get("timer", "")
    out["eager"] = spread(_time(model, inputs, timer, reps))
    if compile_baseline:
        start = time.perf_counter()
        try:
            compiled = baselines.compile_model(model, device)
            out["compile"] = spread(_time(compiled, inputs, timer, reps))
            out["compile_seconds"] = time.perf_counter() - start
        except Exception as exc:  # noqa: BLE001 - the compile baseline failing is a fact, not an error
            out["compile_error"] = f"{type(exc).__name__}: {exc}"[:500]
    with torch.no_grad():
        outputs = model(*inputs)
    try:
        work = sol.count_work(model, inputs)
    except Exception:  # noqa: BLE001 - as the evaluator's sol: no FLOPs, a memory bound
        work = {"flops": 0, "pointwise": None}
    floats = [t for t in tensors.leaves(outputs) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    dtype = floats[0].dtype if floats else torch.float32
    out["tolerances"] = {str(t.dtype).replace("torch.", ""): compare.tolerance_for(t.dtype) for t in floats}
    out["audit"] = {"k": precision_audit.K, "ulps": precision_audit.ULPS}
    bound = sol.speed_of_light(work["flops"], sol.min_bytes(model, inputs, outputs), dtype, peaks, precision,
                             work["pointwise"])
    bound.pop("peaks_key", None)
    out["sol"] = bound
    return out


def main(path: str, sets: List[str], args) -> int:
    overrides = problem.parse_sets(sets)
    session.setup(args.device, args.threads)
    doc = measure(path, overrides, args.device, args.reps, args.cache, not args.no_compile, args.precision)
    Path(args.json).write_text(json.dumps(doc))
    return 0
