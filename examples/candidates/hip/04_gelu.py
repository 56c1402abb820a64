import torch
import torch.nn as nn

from kforge_kernels import hip

# Exact (erf) GELU, memory-bound: float4 loads and stores, grid-stride; the last n % 4 elements go
# through the scalar loop. erff (not a tanh approximation) keeps fp32 accuracy.
SRC = r"""
#include <hip/hip_runtime.h>
__device__ inline float gelu1(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
extern "C" __global__ void __launch_bounds__(256) gelu4(const float* __restrict__ x, float* __restrict__ y, long n) {
    const long n4 = n / 4, stride = (long)gridDim.x * blockDim.x;
    const long tid = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (long i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        y4[i] = make_float4(gelu1(v.x), gelu1(v.y), gelu1(v.z), gelu1(v.w));
    }
    for (long i = n4 * 4 + tid; i < n; i += stride) y[i] = gelu1(x[i]);
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
        _mod.launch("gelu4", (blocks,), (256,), x, out, n)
        return out
