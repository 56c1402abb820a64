import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
// 0.5*x*(1+tanh(u)) == x * sigmoid(2u) == x / (1 + exp(-2u)),  u = sqrt(2/pi)*(x + 0.044715 x^3)
// exp(-2u) = exp2(K * x * (1 + 0.044715 x^2)),  K = -2*sqrt(2/pi)*log2(e)
__device__ __forceinline__ float gelu_new(float x) {
    const float K = (float)(-2.0 * 0.7978845608028654 * 1.4426950408889634);
    const float x2 = x * x;
    const float t = fmaf(0.044715f, x2, 1.0f);
    const float e = exp2f((x * t) * K);
    return __fdividef(x, 1.0f + e);   // e = inf -> x * 0 = +-0 (reference: 0.5*x*0)
}

__device__ __forceinline__ float4 gelu4(float4 v) {
    float4 r;
    r.x = gelu_new(v.x);
    r.y = gelu_new(v.y);
    r.z = gelu_new(v.z);
    r.w = gelu_new(v.w);
    return r;
}

#define TPB 256
#define UNR 4
#define CHUNK (TPB * UNR)
#define UNIT 32   // ranges are split in units of 32 float4 (512 B, whole 128-B lines per warp)

// Persistent: each block owns one contiguous, balanced range of float4s and streams through it in
// chunks of CHUNK float4, with the next chunk's loads in flight while the current chunk is computed
// and stored.
extern "C" __global__ void __launch_bounds__(TPB, 4)
gelu_persist(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
    const long long G = (long long)gridDim.x;
    const long long b = (long long)blockIdx.x;
    const long long nunits = (n4 + UNIT - 1) / UNIT;
    const long long q = nunits / G;
    const long long r = nunits - q * G;
    const long long ubeg = b * q + (b < r ? b : r);
    const long long uend = ubeg + q + (b < r ? 1 : 0);
    const long long beg = ubeg * UNIT;
    long long end = uend * UNIT;
    if (end > n4) end = n4;

    long long p = beg + threadIdx.x;
    float4 cur[UNR], nxt[UNR];
#pragma unroll
    for (int u = 0; u < UNR; ++u) {
        const long long i = p + (long long)u * TPB;
        cur[u] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (i < end) cur[u] = __ldcs(x + i);
    }
    for (; p < end; p += CHUNK) {
        const long long pn = p + CHUNK;
#pragma unroll
        for (int u = 0; u < UNR; ++u) {
            const long long i = pn + (long long)u * TPB;
            nxt[u] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (i < end) nxt[u] = __ldcs(x + i);
        }
#pragma unroll
        for (int u = 0; u < UNR; ++u) {
            const long long i = p + (long long)u * TPB;
            if (i < end) __stcs(y + i, gelu4(cur[u]));
        }
#pragma unroll
        for (int u = 0; u < UNR; ++u) cur[u] = nxt[u];
    }
}

extern "C" __global__ void __launch_bounds__(TPB)
gelu_s(const float* __restrict__ x, float* __restrict__ y, long long start, long long n) {
    const long long i = start + (long long)blockIdx.x * TPB + threadIdx.x;
    if (i < n) y[i] = gelu_new(x[i]);
}
"""
_mod = cuda.compile(SRC)

_TPB = 256
_UNIT = 32
_BLOCKS_PER_SM = 4

try:
    _NUM_SMS = int(torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count)
except Exception:
    _NUM_SMS = 132
_GRID_MAX = _NUM_SMS * _BLOCKS_PER_SM


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return out
        if x.data_ptr() % 16 == 0 and out.data_ptr() % 16 == 0:
            n4 = n // 4
            if n4 > 0:
                nunits = (n4 + _UNIT - 1) // _UNIT
                grid = min(_GRID_MAX, nunits)
                _mod.gelu_persist(grid=(grid,), block=(_TPB,), args=(x, out, n4))
            start = n4 * 4
            if start < n:
                _mod.gelu_s(grid=(1,), block=(_TPB,), args=(x, out, start, n))
        else:
            blocks = (n + _TPB - 1) // _TPB
            _mod.gelu_s(grid=(blocks,), block=(_TPB,), args=(x, out, 0, n))
        return out
