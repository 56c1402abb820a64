import torch
import torch.nn as nn

from kforge_kernels import hip

# Memory-bound: one 16-byte load and store per thread per step (float4), grid-stride loop; the last
# n % 4 elements go through the scalar loop.
SRC = r"""
#include <hip/hip_runtime.h>
extern "C" __global__ void __launch_bounds__(256) relu(const float* __restrict__ x, float* __restrict__ y, long n) {
    const long n4 = n / 4, stride = (long)gridDim.x * blockDim.x;
    const long tid = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (long i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
        y4[i] = v;
    }
    for (long i = n4 * 4 + tid; i < n; i += stride) y[i] = fmaxf(x[i], 0.f);
}
"""
_mod = hip.build(SRC)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        if x.data_ptr() % 16:
            x = x.clone()  # float4 access needs 16-byte alignment
        out = torch.empty_like(x)
        n = x.numel()
        blocks = max(1, min((n // 4 + 255) // 256, 110 * 8))  # a few waves over the MI250's compute units
        _mod.launch("relu", (blocks,), (256,), x, out, n)
        return out
