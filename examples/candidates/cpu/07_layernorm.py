import torch
import torch.nn as nn

from kforge_kernels import native

SRC = r"""
#include <cmath>
#include <cstdint>
extern "C" void layernorm(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                          float* __restrict__ y, int64_t rows, int64_t cols, float eps) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float s = 0.0f;
        #pragma omp simd reduction(+:s)
        for (int64_t c = 0; c < cols; ++c) s += xr[c];
        const float mean = s / cols;
        float v = 0.0f;  // two passes: no cancellation from E[x^2] - E[x]^2
        #pragma omp simd reduction(+:v)
        for (int64_t c = 0; c < cols; ++c) { float d = xr[c] - mean; v += d * d; }
        const float rstd = 1.0f / std::sqrt(v / cols + eps);
        #pragma omp simd
        for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * rstd * w[c] + b[c];
    }
}
"""
_lib = native.load(SRC, {"layernorm": [native.PTR] * 4 + [native.I64, native.I64, native.F32]}, name="layernorm")


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        cols = self.ln.weight.numel()
        w = self.ln.weight.detach().contiguous()
        b = self.ln.bias.detach().contiguous()
        _lib.layernorm(native.ptr(x), native.ptr(w), native.ptr(b), native.ptr(out),
                       x.numel() // cols, cols, self.ln.eps)
        return out
