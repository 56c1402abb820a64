import torch
import torch.nn as nn

from kforge_kernels import native

SRC = r"""
#include <cmath>
#include <cstdint>
extern "C" void mean_std(const float* __restrict__ x, float* __restrict__ mean, float* __restrict__ std_,
                         int64_t rows, int64_t cols) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float s = 0.0f;
        #pragma omp simd reduction(+:s)
        for (int64_t c = 0; c < cols; ++c) s += xr[c];
        const float m = s / cols;
        float v = 0.0f;  // second pass around the mean: no cancellation
        #pragma omp simd reduction(+:v)
        for (int64_t c = 0; c < cols; ++c) { float d = xr[c] - m; v += d * d; }
        mean[r] = m;
        std_[r] = std::sqrt(v / (cols - 1));  // unbiased, like torch.std
    }
}
"""
_lib = native.load(SRC, {"mean_std": [native.PTR] * 3 + [native.I64] * 2}, name="mean_std")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        cols = x.shape[-1]
        mean = torch.empty(x.shape[:-1])
        std = torch.empty(x.shape[:-1])
        _lib.mean_std(native.ptr(x), native.ptr(mean), native.ptr(std), x.numel() // cols, cols)
        return mean, std
