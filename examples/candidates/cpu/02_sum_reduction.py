import torch
import torch.nn as nn

from kforge_kernels import native

# x viewed as (outer, r, inner); out[o, i] = sum_k x[o, k, i]. The inner index is contiguous, so the
# loop over it vectorises; accumulating in double keeps long sums accurate.
SRC = r"""
#include <cstdint>
extern "C" void sum_mid(const float* __restrict__ x, float* __restrict__ out,
                        int64_t outer, int64_t r, int64_t inner) {
    const int64_t CH = 256;  // inner chunk: accumulators stay in registers / L1
    const int64_t chunks = (inner + CH - 1) / CH;
    #pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < outer * chunks; ++t) {
        const int64_t o = t / chunks, i0 = (t % chunks) * CH;
        const int64_t len = inner - i0 < CH ? inner - i0 : CH;
        double acc[CH];
        for (int64_t i = 0; i < len; ++i) acc[i] = 0.0;
        const float* base = x + o * r * inner + i0;
        for (int64_t k = 0; k < r; ++k) {
            const float* row = base + k * inner;
            #pragma omp simd
            for (int64_t i = 0; i < len; ++i) acc[i] += row[i];
        }
        for (int64_t i = 0; i < len; ++i) out[o * inner + i0 + i] = (float)acc[i];
    }
}
"""
_lib = native.load(SRC, {"sum_mid": [native.PTR, native.PTR, native.I64, native.I64, native.I64]}, name="sum_mid")


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        d = self.dim % x.dim()
        outer = 1
        for s in x.shape[:d]:
            outer *= s
        inner = 1
        for s in x.shape[d + 1:]:
            inner *= s
        out_shape = list(x.shape)
        out_shape[d] = 1
        out = torch.empty(out_shape, dtype=x.dtype)
        _lib.sum_mid(native.ptr(x), native.ptr(out), outer, x.shape[d], inner)
        return out
