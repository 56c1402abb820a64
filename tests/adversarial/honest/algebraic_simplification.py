import torch
import torch.nn as nn

from kforge_worker import native

# sum(3x) + sum(2x) == 5 * sum(x): one pass over the input instead of four.
SRC = r"""
#include <cstdint>
extern "C" void five_row_sums(const float* x, float* y, int64_t rows, int64_t cols) {
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        float s = 0.f;
        #pragma omp simd reduction(+:s)
        for (int64_t c = 0; c < cols; ++c) s += x[r * cols + c];
        y[r] = 5.f * s;
    }
}
"""
_lib = native.load(SRC, {"five_row_sums": [native.PTR, native.PTR, native.I64, native.I64]})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0])
        _lib.five_row_sums(native.ptr(x), native.ptr(out), x.shape[0], x.shape[1])
        return out
