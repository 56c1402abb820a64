import math

import torch
import torch.nn as nn

from kforge_kernels import hip

# Sum over one dimension of a contiguous tensor seen as (outer, r, inner): one thread per output
# element walks the r values it sums. Neighbouring threads read neighbouring columns (inner), so
# the loads coalesce whenever the reduced dimension is not the last one.
SRC = r"""
#include <hip/hip_runtime.h>
extern "C" __global__ void __launch_bounds__(256) sum_middle(const float* __restrict__ x, float* __restrict__ y,
                                                             long outer, long r, long inner) {
    const long idx = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= outer * inner) return;
    const long o = idx / inner, j = idx - o * inner;
    const float* p = x + o * r * inner + j;
    float acc = 0.0f;
    for (long i = 0; i < r; ++i) acc += p[i * inner];
    y[idx] = acc;
}
"""
_mod = hip.build(SRC)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        dim = self.dim % x.dim()
        outer, r, inner = math.prod(x.shape[:dim]), x.shape[dim], math.prod(x.shape[dim + 1:])
        shape = list(x.shape)
        shape[dim] = 1
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
        blocks = max(1, (outer * inner + 255) // 256)
        _mod.launch("sum_middle", (blocks,), (256,), x, out, outer, r, inner)
        return out
