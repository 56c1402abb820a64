import torch
import torch.nn as nn

from kforge_kernels import hip

# x * sigmoid(x) with float4 loads and stores, grid-stride; expf (not __expf) keeps fp32 accuracy.
SRC = r"""
#include <hip/hip_runtime.h>
__device__ inline float swish(float v) { return v / (1.0f + expf(-v)); }
extern "C" __global__ void __launch_bounds__(256) swish4(const float* __restrict__ x, float* __restrict__ y, long n) {
    const long n4 = n / 4, stride = (long)gridDim.x * blockDim.x;
    const long tid = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (long i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        y4[i] = make_float4(swish(v.x), swish(v.y), swish(v.z), swish(v.w));
    }
    for (long i = n4 * 4 + tid; i < n; i += stride) y[i] = swish(x[i]);
}
"""
_mod = hip.build(SRC)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        if x.data_ptr() % 16:
            x = x.clone()
        out = torch.empty_like(x)
        n = x.numel()
        _mod.launch("swish4", (max(1, min((n // 4 + 255) // 256, 880)),), (256,), x, out, n)
        return out
