"""Speed of light: the fastest any kernel could run the reference's work on this device.

    flops     torch.utils.flop_counter's formulas over one reference forward (matmuls, convolutions,
              attention): tensor-core (or SIMD GEMM) work
    pointwise the rest of that forward's arithmetic (pointwise_cost.py): elementwise FLOPs (1 per
              output element of add, mul, div, where, ...; 1 per input element of a reduction) and
              transcendental evaluations (exp, log, tanh, erf, rsqrt, ... and softmax's exp), each
              at a stated cost on the FMA units (a 15-FLOP polynomial) or, on a GPU, the special
              function units (1 SFU op), split between them as the fastest kernel would
    bytes     inputs + outputs + parameters and buffers, each moved once
    sol_ms    max(gemm_ms, pointwise_ms, bytes / bandwidth(working set)), where
              gemm_ms = flops / peak_flops[route] and pointwise_ms the elementwise and
              transcendental work at the measured vector (fp32 FMA) rate and the SFU rate

Tensor cores, the FMA pipe, the SFUs and memory are different units that run concurrently, so the
bound is the slowest of them (max: the optimistic bound a speed of light is). Where the GEMM's
route is the FMA units themselves (its rate no faster than the vector rate: a CPU's SGEMM, FFMA on
a GPU) the GEMM and the elementwise work share them and their times add.

That bound counts the reference's FLOPs: an exact algebraic rewrite (``diag(a) @ B`` as a row scaling)
can beat it honestly. The hard, physical bound is ``hard_bound``: the bytes the outputs take plus the
bytes of the inputs they depend on (found by changing one input at a time), at the best bandwidth.
Parameters are left out: a candidate may fold them into anything at construction.

Peaks are measured, not taken from a datasheet: bandwidth by large copies (on the CPU at three
working-set sizes, so a problem that fits in cache is held to the cache's bandwidth) and arithmetic
throughput by a large matmul per dtype, by the device kind's back end (backends/). They are measured
once per device and cached as JSON under
the kforge cache dir, keyed by host, CPU or GPU model, thread count and torch version; the CPU
measurement takes well under two seconds.
"""

import hashlib
import json
import os
import socket
import time
from typing import Optional

import torch

from kforge_worker import backends
from kforge_worker.backends import peak_bounds
from kforge_worker.checks import pointwise_cost
from kforge_worker.common import dispatch_mode
from kforge_worker.exchange import tensors

PEAKS_VERSION = 3  # 2: GPU bandwidth is the best of copy, read and write streams, timed with events; 3: TF32 rate


class _FlopCounter(dispatch_mode.LightDispatchMode):
    """torch.utils.flop_counter's formulas summed over one call, as FlopCounterMode counts them
    (operators without a formula are decomposed first), without its per-module table and without
    importing torch._dynamo before compiled code can run (dispatch_mode). The operators without a
    formula are counted as elementwise work (pointwise_cost)."""

    def __init__(self):
        super().__init__()
        self.flops = 0
        self.pointwise = pointwise_cost.new_work()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.utils.flop_counter import flop_registry

        kwargs = kwargs or {}
        if func not in flop_registry and func is not torch.ops.prim.device.default:
            with self:
                out = func.decompose(*args, **kwargs)
                if out is not NotImplemented:
                    return out
        out = func(*args, **kwargs)
        formula = flop_registry.get(func._overloadpacket)
        if formula is not None:
            self.flops += formula(*args, **kwargs, out_val=out)
        else:
            pointwise_cost.count(self.pointwise, func, args, kwargs, out)
        return out


def count_work(model, inputs) -> dict:
    """{"flops": GEMM/conv FLOPs, "pointwise": {"elementwise_flops", "by_function"}} of one forward."""
    counter = dispatch_mode.make(_FlopCounter)
    with torch.no_grad(), counter:
        model(*inputs)
    return {"flops": int(counter.flops), "pointwise": counter.pointwise}


def min_bytes(model, inputs, outputs) -> int:
    params = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
    return tensors.nbytes(list(inputs)) + tensors.nbytes(outputs) + params


def dependent_inputs(forward, inputs: list, other_inputs: list, outputs) -> list:
    """Per input: does the output change when that input alone is replaced by another draw of it?
    (None for inputs that are not tensors.) Bitwise: any change at all counts as a dependence."""
    from kforge_worker.checks.compare import same_values

    found = []
    for i, (x, other) in enumerate(zip(inputs, other_inputs)):
        if not isinstance(x, torch.Tensor) or not isinstance(other, torch.Tensor) or other.shape != x.shape:
            found.append(None if not isinstance(x, torch.Tensor) else True)
            continue
        probe = [v.detach().clone() if isinstance(v, torch.Tensor) else v for v in inputs]
        probe[i] = other.detach().clone().to(x.device)
        found.append(same_values(outputs, tensors.detach_clone(forward(probe))) is not None)
    return found


def hard_bound(inputs: list, outputs, dependent: list, peaks: dict) -> dict:
    """The physical floor: write the outputs, read each input they depend on, once, at peak bandwidth."""
    output_bytes = tensors.nbytes(outputs)
    input_bytes = sum(tensors.nbytes(x) for x, dep in zip(inputs, dependent) if dep)
    nbytes = output_bytes + input_bytes
    bandwidth = max(level["bytes_per_s"] for level in peaks["bandwidth"])
    return {"bytes": nbytes, "output_bytes": output_bytes, "dependent_input_bytes": input_bytes,
            "dependent_inputs": dependent, "bandwidth_bytes_per_s": bandwidth, "hard_ms": 1e3 * nbytes / bandwidth}


def peaks_key(device: str) -> dict:
    return {"v": PEAKS_VERSION, "host": socket.gethostname(), "device": backends.kind_of(device),
            "model": backends.for_device(device).model_name(device), "threads": torch.get_num_threads(),
            "torch": torch.__version__}


MAX_PEAK_MEASUREMENTS = 3


def measure_plausible(device: str) -> dict:
    """Measures the peaks, again (up to three times in all) while any is implausible against the
    theoretical peaks of peak_bounds; the last measurement is kept, with what stayed implausible."""
    backend = backends.for_device(device)
    bounds = backend.theoretical_bounds(device)
    start = time.perf_counter()
    for attempt in range(1, MAX_PEAK_MEASUREMENTS + 1):
        data = backend.measure_peaks(device)
        problems = peak_bounds.implausible(data, bounds)
        if not problems:
            break
    data.update({"measure_seconds": time.perf_counter() - start, "measurements": attempt, "bounds": bounds})
    if problems:
        data["implausible"] = problems
    return data


def device_peaks(device: str, cache_dir: Optional[str], remeasure: bool = False) -> dict:
    """Cached peaks for this device; measures (and caches) them on the first call, when asked, or when
    the cached ones are implausible against the device's theoretical peaks (peak_bounds)."""
    key = peaks_key(device)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    path = os.path.join(cache_dir, f"{digest}.json") if cache_dir else None
    if path and os.path.exists(path) and not remeasure:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            data["cached"] = True
            # Peaks that stayed implausible through their own re-measurements are kept (with that note).
            if data.get("implausible") or not peak_bounds.implausible(data, backends.for_device(device).theoretical_bounds(device)):
                return data
        except (OSError, ValueError):
            pass
    data = measure_plausible(device)
    data["key"] = key
    if path:
        os.makedirs(cache_dir, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
    data["cached"] = False
    return data


def bandwidth_for(peaks: dict, working_set: int) -> float:
    """The copy bandwidth of the largest measured level the working set fills (the closest size not
    above it; the smallest level when it is below all): part of it still sits in that level's cache,
    so the rate of a larger level (DRAM) would make the bound slower than an honest kernel. Larger
    levels count too, since small copies can understate a level's rate through per-call overhead."""
    levels = sorted(peaks["bandwidth"], key=lambda lv: lv["working_set_bytes"])
    filled = [lv for lv in levels if lv["working_set_bytes"] <= working_set]
    floor = filled[-1]["working_set_bytes"] if filled else levels[0]["working_set_bytes"]
    return max(lv["bytes_per_s"] for lv in levels if lv["working_set_bytes"] >= floor)


# The error-compensated route splits each fp32 operand into a TF32 high part and a residual and adds
# three TF32 products (hi*hi + hi*lo + lo*hi): fp32-level error, a third of the TF32 rate.
COMPENSATED_PRODUCTS = 3


def flop_routes(name: str, peaks: dict, policy: str = "strict") -> list:
    """The arithmetic routes the precision policy allows for the reference's counted FLOPs (matmuls,
    convolutions, attention: tensor-core work) in dtype ``name``, each with its measured rate. fp32
    under ``strict``: FFMA on the CUDA cores, and error-compensated tensor-core math (3xTF32, and
    3xFP16 where fp16 is measured), which the float64 audit (precision.py) accepts since its error
    is fp32's; under ``relaxed``, TF32 itself. A kernel faster than every route would be above 100%
    of speed of light: a route missing here, not a fast kernel."""
    rates = peaks["flops"]
    peak = rates.get(name) or rates.get("float32")
    routes = [{"route": f"{name} at the measured library rate", "peak_flops_per_s": peak}]
    tf32 = rates.get("tfloat32")
    if name == "float32" and tf32:
        if policy == "relaxed":
            routes.append({"route": "TF32 tensor cores (relaxed precision)", "peak_flops_per_s": tf32})
        else:
            routes.append({"route": "3xTF32 error-compensated tensor cores (accepted by the float64 audit)",
                           "peak_flops_per_s": tf32 / COMPENSATED_PRODUCTS})
            # The same split into fp16 halves (11 bits each, products accumulated in fp32) is as
            # exact where the data's range fits fp16's, and the audit accepts it there: a third of
            # the fp16 tensor-core rate, which on Hopper is faster than 3xTF32.
            fp16 = rates.get("float16")
            if fp16:
                routes.append({"route": "3xFP16 error-compensated tensor cores (accepted by the float64 audit "
                                        "where the data fits fp16's range)",
                               "peak_flops_per_s": fp16 / COMPENSATED_PRODUCTS})
    return routes


def pointwise_bound(pointwise: Optional[dict], dtype_name: str, peaks: dict, shared_gemm_s: float = 0.0) -> dict:
    """The elementwise and transcendental work's fastest time (pointwise_cost.arithmetic_seconds):
    on the FMA units at the measured vector rate and, on a GPU, the SFUs at the documented share of
    it. ``shared_gemm_s``: GEMM time on the same FMA units, which adds to theirs."""
    pointwise = pointwise or pointwise_cost.new_work()
    gpu = peaks.get("key", {}).get("device", "cpu") != "cpu" or "tfloat32" in peaks.get("flops", {})
    vector = pointwise_cost.vector_rate(peaks, dtype_name, gpu)
    sfu = vector / 2 * pointwise_cost.SFU_PER_FMA_INSTRUCTION if gpu and vector else None
    by_function = dict(sorted(pointwise.get("by_function", {}).items(), key=lambda kv: -kv[1]))
    evaluations = sum(by_function.values())
    flops = pointwise.get("elementwise_flops", 0)
    poly = pointwise_cost.poly_flops(by_function)
    out = {"elementwise_flops": flops, "transcendentals": evaluations, "by_function": by_function,
           "polynomial_flops": poly, "vector_flops_per_s": vector, "sfu_ops_per_s": sfu}
    if not vector or not (flops or evaluations or shared_gemm_s):
        return {**out, "ms": 0.0, "sfu_share": 0.0}
    seconds, share = pointwise_cost.arithmetic_seconds(flops + shared_gemm_s * vector, evaluations, poly, vector, sfu)
    route = ("FMA-unit polynomials" if not share else "special function units" if share >= 1
             else f"{100 * share:.0f}% on the special function units, the rest as FMA polynomials")
    return {**out, "ms": 1e3 * seconds, "sfu_share": share, "route": route}


def speed_of_light(flops: int, nbytes: int, dtype: torch.dtype, peaks: dict, policy: str = "strict",
                   pointwise: Optional[dict] = None) -> dict:
    """The bound by the fastest allowed route (flop_routes): an honest kernel may take any of them, so
    only a time below this one is physically impossible. ``pointwise``: count_work's elementwise and
    transcendental work, bounded on the FMA units and SFUs beside the GEMM's route (module doc)."""
    name = str(dtype).replace("torch.", "")
    routes = flop_routes(name, peaks, policy)
    fastest = max(routes, key=lambda r: r["peak_flops_per_s"] or 0)
    peak_flops, route = fastest["peak_flops_per_s"], {"route": fastest["route"]}
    if not flops:  # no arithmetic route bounds anything: the bytes alone do (the roofline keeps a roof)
        routes, route, peak_flops = [], {}, routes[0]["peak_flops_per_s"]
    bandwidth = bandwidth_for(peaks, nbytes)
    gemm_ms = 1e3 * flops / peak_flops if peak_flops else 0.0
    vector = pointwise_cost.vector_rate(peaks, name, False)
    shared = bool(flops and peak_flops and vector and peak_flops <= vector)  # the GEMM runs on the FMA units
    arithmetic = pointwise_bound(pointwise, name, peaks, gemm_ms / 1e3 if shared else 0.0)
    compute_ms = max(gemm_ms, arithmetic["ms"])
    has_pointwise = bool(arithmetic["elementwise_flops"] or arithmetic["transcendentals"])
    if not has_pointwise or (gemm_ms >= arithmetic["ms"] and not shared):
        by = "gemm"
    else:
        by = "gemm+pointwise" if shared else "pointwise"
    memory_ms = 1e3 * nbytes / bandwidth
    return {"flops": flops, "bytes": nbytes, "dtype": name, "peak_flops_per_s": peak_flops,
            "bandwidth_bytes_per_s": bandwidth, "compute_ms": compute_ms, "memory_ms": memory_ms,
            "sol_ms": max(compute_ms, memory_ms), "bound": "compute" if compute_ms >= memory_ms else "memory",
            "gemm_ms": gemm_ms, "pointwise_ms": arithmetic["ms"], "compute_by": by,
            "pointwise_flops": arithmetic["elementwise_flops"], "transcendentals": arithmetic["transcendentals"],
            "pointwise": {**arithmetic, "shares_fma_units_with_gemm": shared},
            **route, "routes": routes,
            "peaks_cached": peaks.get("cached", False), "peaks_key": peaks.get("key", {})}
