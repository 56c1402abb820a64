import torch
import torch.nn as nn

from kforge_kernels import native

SRC = r"""
#include <cstdint>
extern "C" void relu(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64]}, name="relu")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
