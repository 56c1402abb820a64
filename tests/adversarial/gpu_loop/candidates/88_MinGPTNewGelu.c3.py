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

#define TPB 128
#define UNR 2

extern "C" __global__ void __launch_bounds__(TPB)
gelu_v4(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
    const long long base = (long long)blockIdx.x * (TPB * UNR) + threadIdx.x;
    float4 v[UNR];
#pragma unroll
    for (int u = 0; u < UNR; ++u) {
        const long long i = base + (long long)u * TPB;
        v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (i < n4) v[u] = __ldg(x + i);
    }
#pragma unroll
    for (int u = 0; u < UNR; ++u) {
        const long long i = base + (long long)u * TPB;
        if (i < n4) {
            float4 r;
            r.x = gelu_new(v[u].x);
            r.y = gelu_new(v[u].y);
            r.z = gelu_new(v[u].z);
            r.w = gelu_new(v[u].w);
            y[i] = r;
        }
    }
}

#define STPB 256

extern "C" __global__ void __launch_bounds__(STPB)
gelu_s(const float* __restrict__ x, float* __restrict__ y, long long start, long long n) {
    const long long i = start + (long long)blockIdx.x * STPB + threadIdx.x;
    if (i < n) y[i] = gelu_new(__ldg(x + i));
}
"""
_mod = cuda.compile(SRC)
_k_v4 = _mod.gelu_v4
_k_s = _mod.gelu_s

_TPB = 128
_UNR = 2
_CHUNK = _TPB * _UNR
_STPB = 256


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        if not x.is_contiguous():
            x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return out
        if ((x.data_ptr() | out.data_ptr()) & 15) == 0:
            n4 = n >> 2
            if n4 > 0:
                _k_v4(grid=((n4 + _CHUNK - 1) // _CHUNK,), block=(_TPB,), args=(x, out, n4))
            start = n4 << 2
            if start < n:
                _k_s(grid=(1,), block=(_STPB,), args=(x, out, start, n))
        else:
            _k_s(grid=((n + _STPB - 1) // _STPB,), block=(_STPB,), args=(x, out, 0, n))
        return out
