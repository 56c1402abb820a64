import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cstdint>
// C[m,n] = A[m,k] @ B[k,n], rows split over threads, the inner loop vectorised.
extern "C" void matmul(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
    #pragma omp parallel for
    for (int64_t i = 0; i < m; ++i) {
        float* ci = c + i * n;
        for (int64_t j = 0; j < n; ++j) ci[j] = 0.f;
        for (int64_t p = 0; p < k; ++p) {
            const float aip = a[i * k + p];
            const float* bp = b + p * n;
            #pragma omp simd
            for (int64_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
        }
    }
}
extern "C" void bias_relu(float* y, const float* bias, int64_t rows, int64_t cols) {
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) { const float v = y[r * cols + c] + bias[c]; y[r * cols + c] = v > 0.f ? v : 0.f; }
}
"""
_lib = native.load(SRC, {"matmul": [native.PTR] * 3 + [native.I64] * 3,
                         "bias_relu": [native.PTR, native.PTR, native.I64, native.I64]})


class ModelNew(nn.Module):
    """Weights transposed once, in __init__ (built exactly as the reference builds them)."""

    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.register_buffer("packed", self.linear.weight.detach().t().contiguous(), persistent=False)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0], self.packed.shape[1])
        _lib.matmul(native.ptr(x), native.ptr(self.packed), native.ptr(out), x.shape[0], x.shape[1],
                    self.packed.shape[1])
        bias = self.linear.bias.detach().contiguous()
        _lib.bias_relu(native.ptr(out), native.ptr(bias), out.shape[0], out.shape[1])
        return out
