import torch
import torch.nn as nn

from kforge_kernels import hip

# HIP C++ built once with hipcc --genco for $KFORGE_HIP_ARCH (gfx90a by default) and cached on disk.
# Tensors become device pointers; Python ints are passed as 64-bit (declare `long`), floats as `float`.
SRC = r"""
#include <hip/hip_runtime.h>
extern "C" __global__ void __launch_bounds__(256) scale_bias_relu(const float* __restrict__ x,
        const float* __restrict__ bias, float* __restrict__ y, long n, long cols, float scale) {
    const long stride = (long)gridDim.x * blockDim.x;
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = fmaxf(fmaf(x[i], scale, bias[i % cols]), 0.f);
}
"""
_mod = hip.build(SRC)


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features) * 0.1)  # same name and shape as the reference
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        bias = self.bias.detach().contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _mod.launch("scale_bias_relu", (max(1, min((n + 255) // 256, 880)),), (256,), x, bias, out, n, bias.numel(),
                    float(self.scale))
        return out
