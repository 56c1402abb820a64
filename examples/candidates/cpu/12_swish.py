import torch
import torch.nn as nn

from kforge_kernels import native

# -ffast-math lets GCC vectorise expf through glibc's libmvec (accurate to a few ulp).
SRC = r"""
#include <cmath>
#include <cstdint>
extern "C" void swish(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    #pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + expf(-x[i]));
}
"""
_lib = native.load(SRC, {"swish": [native.PTR, native.PTR, native.I64]}, name="swish", cflags=["-ffast-math"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.swish(native.ptr(x), native.ptr(out), x.numel())
        return out
