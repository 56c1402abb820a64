"""The reference's arithmetic outside matmuls and convolutions, and the fastest time any kernel needs for it.

torch.utils.flop_counter counts matmuls, convolutions and attention only, so a softmax had no work
and its speed of light was its bytes alone. This module counts the rest, per output element of
each ATen operator one reference forward runs (sol.py's dispatch mode calls ``count``):

    elementwise FLOPs   1 per output element for an operator torch tags pointwise (add, mul, div,
                        where, compare, clamp, relu, ...); 1 per input element for a reduction (sum,
                        mean, amax, ...), 3 for var/std; a few per element for the composite
                        operators in ``COMPOSITE`` (softmax, layer norm, ...), listed there
    transcendentals     evaluations of exp, log, tanh, erf, sin, sqrt, rsqrt, ... (``FUNCTIONS``:
                        each operator's evaluations per element, and the arithmetic it adds)

Cost of one evaluation, on the routes a kernel may take (FLOPs count an FMA as 2, like GEMM FLOPs):

    polynomial   ``POLY_FLOPS`` = 15 FLOPs for exp-like functions (exp, log, tanh, erf's exponential,
                 sin, ...): range reduction (2 FMAs), a degree-5 polynomial by Horner (5 FMAs) and the
                 scaling (1 multiply), as ATen's AVX-512 ``Vectorized<float>::exp_u20``
                 (aten/src/ATen/cpu/vec/vec512/vec512_float.h) computes it; SLEEF's u10/u35 functions
                 and Cephes use polynomials of degree 5 to 9 with more fix-up, so 15 is the low end.
                 ``ROOT_FLOPS`` = 5 for sqrt, rsqrt and reciprocal: the hardware estimate
                 (vrsqrt14ps / vrcp14ps) and one Newton step (2 FMAs). The CPU's route, and the GPU's
                 alternative to its special function units (an FMA polynomial, as fast attention
                 kernels use to offload them).
    SFU          GPUs only: one special-function-unit operation (MUFU.EX2, LG2, SIN, COS, RSQ, RCP,
                 TANH) plus ``SFU_EXTRA_FLOPS`` = 1 on the FMA pipe (the x*log2(e) scaling of
                 __expf). The CUDA C++ Programming Guide's "Throughput of Native Arithmetic
                 Instructions" table gives 16 such results per clock per SM on compute capability
                 7.x, 8.x and 9.0 against 128 fp32 add/multiply/FMA results (64 on 7.x and 8.0),
                 so ``SFU_PER_FMA_INSTRUCTION`` = 16/128 of the FMA instruction rate; MUFU.TANH is
                 PTX's tanh.approx.f32 (sm_75 and later).

The rates are measured, not taken from a datasheet: the vector rate is the measured fp32 matmul
rate (the FMA units near their peak: SGEMM on the CPU's SIMD units, FFMA on the GPU's CUDA cores
under strict precision), the SFU rate that times the documented ratio. Since the SFU and the FMA
pipe issue concurrently, the fastest kernel splits the evaluations between them so both finish
together (``arithmetic_seconds``). Counting every elementwise operation as one FLOP at the FMA
rate assumes each pairs into an FMA: up to 2x optimistic, as a speed of light may be.
"""

import math
from typing import Optional

import torch

POLY_FLOPS = 15
ROOT_FLOPS = 5
SFU_EXTRA_FLOPS = 1
SFU_PER_FMA_INSTRUCTION = 16 / 128
# 16-bit add/multiply/FMA: 256 results per clock per SM (packed half2/bfloat162) against 128 for fp32
# on compute capability 8.x and 9.0 (the same table).
PACKED_16BIT_SPEEDUP = 2

ROOTS = {"sqrt", "rsqrt", "reciprocal"}

# ATen operator -> ({function: evaluations per element}, arithmetic FLOPs it adds per element).
# Compositions: tanh as one MUFU.TANH (on the CPU an exp and 4 FLOPs, inside the polynomial's 15);
# sigmoid(x) = 0.5 tanh(0.5 x) + 0.5; erf as Abramowitz-Stegun 7.1.26, the form ATen's AVX-512 erf
# takes: t = 1/(1 + p|x|), a degree-5 polynomial in t, times exp(-x^2) (14 FLOPs, an exp, a
# reciprocal); gelu = 0.5 x (1 + erf(x / sqrt 2)), or with tanh for approximate="tanh". Functions
# with no SFU instruction (atan, asin, acos) are polynomials on the FMA units.
EXP, LOG, TANH = {"exp": 1}, {"log": 1}, {"tanh": 1}
ERF = {"exp": 1, "reciprocal": 1}
FUNCTIONS = {
    "exp": (EXP, 0), "exp2": (EXP, 0), "expm1": (EXP, 1),
    "log": (LOG, 0), "log2": (LOG, 0), "log10": (LOG, 1), "log1p": (LOG, 1),
    "tanh": (TANH, 0), "sigmoid": (TANH, 3), "silu": (TANH, 4),
    "erf": (ERF, 14), "erfc": (ERF, 14),
    "sin": ({"sin": 1}, 0), "cos": ({"cos": 1}, 0), "tan": ({"sin": 1, "cos": 1}, 1),
    "sinh": (ERF, 2), "cosh": (ERF, 2), "asinh": ({"log": 1, "sqrt": 1}, 3), "acosh": ({"log": 1, "sqrt": 1}, 3),
    "atanh": (LOG, 4), "atan": ({}, POLY_FLOPS), "asin": ({"sqrt": 1}, POLY_FLOPS + 3),
    "acos": ({"sqrt": 1}, POLY_FLOPS + 3),
    "sqrt": ({"sqrt": 1}, 0), "rsqrt": ({"rsqrt": 1}, 0), "reciprocal": ({"reciprocal": 1}, 0),
    "elu": (EXP, 3), "celu": (EXP, 3), "selu": (EXP, 4),
    "softplus": ({"exp": 1, "log": 1}, 1), "mish": ({"exp": 1, "log": 1, "tanh": 1}, 2),
    "log_sigmoid_forward": ({"exp": 1, "log": 1}, 2), "logaddexp": ({"exp": 1, "log": 1}, 3),
    "logit": (LOG, 2), "xlogy": (LOG, 1), "special_xlog1py": (LOG, 2),
    "gelu": (ERF, 18),
}
GELU_TANH = (TANH, 8)

# Composite operators, whose work scales with their first input: ({function: per element}, FLOPs).
# softmax: max (1), subtract (1), exp, sum (1), scale by the row's reciprocal (1); log_softmax: the
# same with the log of the row sum (one per row: negligible) subtracted instead of the scaling.
# layer/group norm: mean (1), subtract (1), sum of squares (an FMA: 2), scale (1), affine FMA (2);
# one rsqrt per row (negligible). Inference batch norm folds into one FMA per element (2).
COMPOSITE = {
    "_softmax": (EXP, 4), "_log_softmax": (EXP, 4), "_safe_softmax": (EXP, 4),
    "native_layer_norm": ({}, 7), "native_group_norm": ({}, 7), "_fused_rms_norm": ({}, 5),
    "native_batch_norm": ({}, 7), "_native_batch_norm_legit": ({}, 7),
    "_native_batch_norm_legit_no_training": ({}, 2),
}

# Pointwise-tagged operators that move data and compute nothing.
DATA_MOVEMENT = {"clone", "copy", "_to_copy", "lift_fresh", "lift_fresh_copy", "alias", "fill", "zero",
                 "zeros_like", "ones_like", "empty_like", "full_like", "detach", "_conj", "positive", "real",
                 "imag"}

# Reductions that do more than one operation per input element: var/std: subtract, square-accumulate.
REDUCTION_FLOPS = {"var": 3, "std": 3, "var_mean": 3, "std_mean": 3, "linalg_vector_norm": 2, "norm": 2}


def _numel(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, (tuple, list)):
        return sum(_numel(v) for v in value)
    return 0


def _first_tensor(args) -> Optional[torch.Tensor]:
    for a in args:
        if isinstance(a, torch.Tensor):
            return a
    return None


def new_work() -> dict:
    return {"elementwise_flops": 0, "by_function": {}}


def _add_function(work: dict, name: str, count: int) -> None:
    if count:
        work["by_function"][name] = work["by_function"].get(name, 0) + count


def _pow(work: dict, args, elements: int) -> None:
    """pow(x, c) for a constant c: squaring and small integer powers are multiplies, 0.5 a sqrt."""
    exponent = args[1] if len(args) > 1 and not isinstance(args[1], torch.Tensor) else None
    if isinstance(exponent, (int, float)) and float(exponent).is_integer() and 0 <= exponent <= 8:
        work["elementwise_flops"] += elements * max(1, math.ceil(math.log2(max(exponent, 2))))
    elif exponent in (0.5, -0.5, -1, -1.0):
        _add_function(work, {0.5: "sqrt", -0.5: "rsqrt"}.get(exponent, "reciprocal"), elements)
    else:
        _add_function(work, "exp", elements)
        _add_function(work, "log", elements)
        work["elementwise_flops"] += elements


def _add(work: dict, functions: dict, flops: int, elements: int) -> None:
    for function, per in functions.items():
        _add_function(work, function, per * elements)
    work["elementwise_flops"] += flops * elements


def count(work: dict, func, args, kwargs, out) -> None:
    """Adds one operator call's elementwise FLOPs and transcendental evaluations to ``work``."""
    name = func._overloadpacket.__name__.rstrip("_")  # in-place variants cost the same
    elements = _numel(out)
    first = _first_tensor(args)
    if name in COMPOSITE:
        _add(work, *COMPOSITE[name], first.numel() if first is not None else elements)
    elif name in DATA_MOVEMENT:
        return
    elif torch.Tag.reduction in getattr(func, "tags", ()):
        work["elementwise_flops"] += REDUCTION_FLOPS.get(name, 1) * (first.numel() if first is not None else elements)
    elif name in ("pow", "float_power"):
        _pow(work, args, elements)
    elif name == "gelu" and (kwargs or {}).get("approximate", args[1] if len(args) > 1 else "none") == "tanh":
        _add(work, *GELU_TANH, elements)
    elif name in FUNCTIONS:
        _add(work, *FUNCTIONS[name], elements)
    elif torch.Tag.pointwise in getattr(func, "tags", ()):
        work["elementwise_flops"] += elements


def poly_flops(by_function: dict) -> int:
    """FLOPs of all the evaluations by FMA polynomials (the route without special function units)."""
    return sum(n * (ROOT_FLOPS if f in ROOTS else POLY_FLOPS) for f, n in by_function.items())


def vector_rate(peaks: dict, dtype_name: str, gpu: bool) -> Optional[float]:
    """FLOP/s of the FMA units for elementwise work in this dtype: the measured fp32 matmul rate
    (float64 its own); on a GPU, 16-bit dtypes at the packed rate."""
    rates = peaks.get("flops", {})
    rate = rates.get("float64") if dtype_name == "float64" else rates.get("float32")
    if rate and gpu and dtype_name in ("float16", "bfloat16"):
        rate *= PACKED_16BIT_SPEEDUP
    return rate


def arithmetic_seconds(vector_flops: float, evaluations: int, poly: float, vector: float,
                       sfu: Optional[float]) -> tuple:
    """(seconds, share of the evaluations on the SFU) for ``vector_flops`` of plain arithmetic and
    ``evaluations`` transcendental evaluations costing ``poly`` FLOPs in all as polynomials.

    Without SFUs every evaluation is a polynomial on the FMA units. With them, a share f runs on
    the SFUs (1 op + SFU_EXTRA_FLOPS each) and the rest as polynomials; the units run concurrently,
    so the time is max(SFU time, FMA time), least where the two meet:
        f n / sfu = (w + P - f (P - n e)) / vector."""
    if not evaluations or not sfu:
        return (vector_flops + poly) / vector, 0.0
    n, e = evaluations, SFU_EXTRA_FLOPS
    saved = poly - n * e  # FMA-pipe FLOPs an evaluation moved to the SFU frees
    if saved <= 0:
        share = 1.0
    else:
        share = min(1.0, ((vector_flops + poly) / vector) / (n / sfu + saved / vector))
    seconds = max(share * n / sfu, (vector_flops + poly - share * saved) / vector)
    return seconds, share
