import torch
import torch.nn as nn

from kforge_kernels import native

# Plain C++ compiled by g++ -O3 -march=native -fopenmp (about a second, cached across runs).
# Functions are extern "C" and take raw pointers; rows are split over threads, columns vectorise.
SRC = r"""
#include <cstdint>
extern "C" void scale_bias_relu(const float* __restrict__ x, const float* __restrict__ bias,
                                float* __restrict__ y, int64_t rows, int64_t cols, float scale) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        #pragma omp simd
        for (int64_t c = 0; c < cols; ++c) {
            const float v = xr[c] * scale + bias[c];
            yr[c] = v > 0.0f ? v : 0.0f;
        }
    }
}
"""
# argtypes per function: PTR for tensor data, I64/I32/F32/F64 for scalars.
_lib = native.load(SRC, {"scale_bias_relu": [native.PTR, native.PTR, native.PTR, native.I64, native.I64, native.F32]})


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features) * 0.1)  # same name and shape as the reference
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()  # native.ptr refuses non-contiguous tensors
        bias = self.bias.detach().contiguous()
        out = torch.empty_like(x)
        cols = bias.numel()
        _lib.scale_bias_relu(native.ptr(x), native.ptr(bias), native.ptr(out), x.numel() // cols, cols, self.scale)
        return out
