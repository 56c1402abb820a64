import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cstdint>
// out[r] = sum_c g[r, c] + sum_c y[r, c], in one pass over each row, accumulated in double.
extern "C" void row_sums(const float* g, const float* y, float* out, int64_t rows, int64_t gc, int64_t yc) {
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0., t = 0.;
        for (int64_t c = 0; c < gc; ++c) s += g[r * gc + c];
        #pragma omp simd reduction(+:t)
        for (int64_t c = 0; c < yc; ++c) t += y[r * yc + c];
        out[r] = (float)(s + t);
    }
}
"""
_lib = native.load(SRC, {"row_sums": [native.PTR] * 3 + [native.I64] * 3})


class ModelNew(nn.Module):
    """The reference's GEMM stays a library call (allowed by the target); the row sums are its own."""

    def forward(self, a, w, y):
        g = torch.mm(a, w)
        y = y.contiguous()
        out = torch.empty(a.shape[0])
        _lib.row_sums(native.ptr(g), native.ptr(y), native.ptr(out), g.shape[0], g.shape[1], y.shape[1])
        return out
