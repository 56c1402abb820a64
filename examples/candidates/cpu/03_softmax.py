import torch
import torch.nn as nn

from kforge_kernels import native

# One row per iteration: max, exp and sum, scale. -ffast-math lets GCC call glibc's vector expf
# (libmvec, <= 4 ulp error); the max starts from x[0] because fast-math assumes no infinities.
SRC = r"""
#include <cmath>
#include <cstdint>
extern "C" void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = xr[0];
        #pragma omp simd reduction(max:m)
        for (int64_t c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        float s = 0.0f;
        #pragma omp simd reduction(+:s)
        for (int64_t c = 0; c < cols; ++c) { float e = expf(xr[c] - m); yr[c] = e; s += e; }
        const float inv = 1.0f / s;
        #pragma omp simd
        for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
    }
}
"""
_lib = native.load(SRC, {"softmax_rows": [native.PTR, native.PTR, native.I64, native.I64]},
                   name="softmax", cflags=["-ffast-math"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        cols = x.shape[-1]
        _lib.softmax_rows(native.ptr(x), native.ptr(out), x.numel() // cols, cols)
        return out
