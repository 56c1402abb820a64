"""The checks' statistics in one pass over both tensors, on an NVIDIA GPU.

compare.compare and the tightened check (calibration.scaled_check) build their statistics from
PyTorch operators: a temporary per step, about 25 passes over memory for a default check and 18 for
a tightened one. At KernelBench's sizes (6.4 GB outputs) that took 80-110 ms of every trial's check
on an H200, where reading both tensors once takes 3 ms. These kernels read both once and compute
what the passing case needs, with the same float32 operations in the same order as the operator
path (no fused multiply-add, IEEE division), so an element passes here exactly when it passes there:

- ``stats``: the largest |got - expected|, the largest |got - expected| / max(|expected|, tiny),
  the elements over ``tol + tol * max(|expected|, tiny)``, the non-finite elements on either side
  and the sum of squares of ``expected`` (in float64, for the tightened rule's RMS);
- ``scaled``: the elements over ``tol * |expected| + atol`` (the tightened rule).

Only the passing case is decided here. Where an element fails or is not finite, the caller takes the
operator path, which reports the worst element and judges NaN and Inf. float32, float16 and
bfloat16 outputs (computed in float32, as the operator path does), contiguous; anything else, a GPU
that is not NVIDIA's or a toolchain that cannot build the kernels, takes the operator path too.

The kernels are built with kforge_kernels.cuda (NVRTC) in the reference's process, into kforge's
build cache, which a candidate can only read (docs/isolation.md).
"""

from typing import NamedTuple, Optional

import torch

from kforge_worker.exchange import worker_kernels

SOURCE = worker_kernels.BLOCK_REDUCE + r"""
__device__ __forceinline__ float load(const float* p, long long i) { return p[i]; }
__device__ __forceinline__ float load(const unsigned short* p, long long i, int bf16) {
  unsigned short bits = p[i];
  if (bf16) return __uint_as_float(((unsigned)bits) << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
  return f;
}

// Non-negative floats order as their bits do, so their maximum is an integer atomicMax.
__device__ __forceinline__ void block_max(float v, unsigned* out) {
  v = block_reduce(v, 0.f, FloatMax());
  if (threadIdx.x == 0) atomicMax(out, __float_as_uint(v));
}

__device__ __forceinline__ void block_sum(double v, double* out) {
  v = block_reduce(v, 0.0, Sum());
  if (threadIdx.x == 0) atomicAdd(out, v);
}

// Each thread reads UNROLL elements a grid's width apart before it uses any: enough loads in
// flight to keep the memory busy.
#define UNROLL 4
#define FOR_EACH(LOAD_E, LOAD_G, BODY)                                                        \
  long long stride = (long long)gridDim.x * blockDim.x;                                       \
  for (long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x; base < n;            \
       base += UNROLL * stride) {                                                             \
    float es[UNROLL], gs[UNROLL];                                                             \
    _Pragma("unroll") for (int k = 0; k < UNROLL; ++k) {                                      \
      long long i = base + k * stride;                                                        \
      if (i < n) { es[k] = LOAD_E; gs[k] = LOAD_G; }                                          \
    }                                                                                         \
    _Pragma("unroll") for (int k = 0; k < UNROLL; ++k) {                                      \
      if (base + k * stride < n) { float ev = es[k], gv = gs[k]; BODY }                       \
    }                                                                                         \
  }

// maxes: [largest |g - e|, largest relative error] as float bits; counts: [elements over the
// threshold, non-finite elements]; sumsq: sum of e^2 over finite elements.
#define STATS_BODY(LOAD_E, LOAD_G)                                                          \
  float max_abs = 0.f, max_rel = 0.f;                                                       \
  u64 bad = 0, nonfinite = 0;                                                               \
  double sq = 0.0;                                                                          \
  const float tiny = 1.17549435e-38f;                                                       \
  FOR_EACH(LOAD_E, LOAD_G, {                                                                \
    if (!isfinite(ev) || !isfinite(gv)) { ++nonfinite; continue; }                          \
    float err = fabsf(__fsub_rn(gv, ev));                                                   \
    float ea = fmaxf(fabsf(ev), tiny);                                                      \
    bad += err > __fadd_rn(__fmul_rn(ea, tol), tol);                                        \
    max_abs = fmaxf(max_abs, err);                                                          \
    max_rel = fmaxf(max_rel, __fdiv_rn(err, ea));                                           \
    sq += (double)ev * (double)ev;                                                          \
  })                                                                                        \
  block_max(max_abs, maxes);                                                                \
  block_max(max_rel, maxes + 1);                                                            \
  block_sum_u64(bad, counts);                                                                 \
  block_sum_u64(nonfinite, counts + 1);                                                       \
  block_sum(sq, sumsq);

#define SCALED_BODY(LOAD_E, LOAD_G)                                                         \
  u64 bad = 0;                                                                              \
  FOR_EACH(LOAD_E, LOAD_G, {                                                                \
    float err = fabsf(__fsub_rn(gv, ev));                                                   \
    bad += !(err <= __fadd_rn(__fmul_rn(fabsf(ev), tol), atol));                            \
  })                                                                                        \
  block_sum_u64(bad, counts);

extern "C" __global__ void stats_f32(const float* e, const float* g, long long n, float tol,
                                     unsigned* maxes, u64* counts, double* sumsq) {
  STATS_BODY(load(e, i), load(g, i))
}
extern "C" __global__ void stats_16(const unsigned short* e, const unsigned short* g, long long n, float tol,
                                    int bf16, unsigned* maxes, u64* counts, double* sumsq) {
  STATS_BODY(load(e, i, bf16), load(g, i, bf16))
}
extern "C" __global__ void scaled_f32(const float* e, const float* g, long long n, float tol, float atol,
                                      u64* counts) {
  SCALED_BODY(load(e, i), load(g, i))
}
extern "C" __global__ void scaled_16(const unsigned short* e, const unsigned short* g, long long n, float tol,
                                     float atol, int bf16, u64* counts) {
  SCALED_BODY(load(e, i, bf16), load(g, i, bf16))
}
"""

BLOCK = 256
BLOCKS_PER_SM = 8
# Below this many elements the operator path costs less than a launch and three read-backs.
MIN_ELEMENTS = 1 << 20
_DTYPES = {torch.float32: "f32", torch.float16: "16", torch.bfloat16: "16"}

_kernels = worker_kernels.WorkerModule(SOURCE, "kforge_device_compare")


class Stats(NamedTuple):
    max_abs: float
    max_rel: float
    over: int  # elements over tol + tol * |expected|
    nonfinite: int  # elements where either side is NaN or Inf
    sum_squares: float  # of expected's finite elements, in float64


def usable(expected: torch.Tensor, got: torch.Tensor) -> bool:
    """Whether the kernels can judge this pair: same dtype among float32, float16 and bfloat16,
    contiguous, large enough, on one NVIDIA GPU where the kernels build."""
    return (expected.is_cuda and got.device == expected.device and expected.dtype in _DTYPES
            and got.dtype == expected.dtype and expected.numel() >= MIN_ELEMENTS
            and expected.is_contiguous() and got.is_contiguous() and _kernels.usable(expected.device))


def stats(expected: torch.Tensor, got: torch.Tensor, tol: float) -> Optional[Stats]:
    """compare's statistics of a pair ``usable`` accepted, read back once (None where the kernel
    could not run here: the operator path decides)."""
    maxes = torch.zeros(2, dtype=torch.int32, device=expected.device)
    counts = torch.zeros(2, dtype=torch.int64, device=expected.device)
    sumsq = torch.zeros(1, dtype=torch.float64, device=expected.device)
    if not _launch("stats", expected, got, (tol,), (maxes, counts, sumsq)):
        return None
    m = maxes.view(torch.float32).tolist()
    c = counts.tolist()
    return Stats(m[0], m[1], c[0], c[1], float(sumsq.item()))


def scaled_over(expected: torch.Tensor, got: torch.Tensor, tol: float, atol: float) -> Optional[int]:
    """Elements of a pair ``usable`` accepted over the tightened rule's ``tol * |expected| + atol``
    (a NaN on either side counts: callers use this only where stats found none); None as for stats."""
    counts = torch.zeros(1, dtype=torch.int64, device=expected.device)
    if not _launch("scaled", expected, got, (tol, atol), (counts,)):
        return None
    return int(counts.item())


def _launch(kind: str, expected: torch.Tensor, got: torch.Tensor, scalars: tuple, outs: tuple) -> bool:
    n = expected.numel()
    suffix = _DTYPES[expected.dtype]
    sms = torch.cuda.get_device_properties(expected.device).multi_processor_count
    grid = max(1, min((n + BLOCK - 1) // BLOCK, sms * BLOCKS_PER_SM))
    if suffix == "f32":
        args = (expected, got, n, *scalars, *outs)
    else:  # 16-bit values are read as their bits: no fp16 or bf16 header needed
        e, g = expected.view(torch.int16), got.view(torch.int16)
        args = (e, g, n, *scalars, int(expected.dtype == torch.bfloat16), *outs)
    return _kernels.launch(f"{kind}_{suffix}", expected.device, grid, BLOCK, args)


def unavailable_reason() -> Optional[str]:
    return _kernels.unavailable
