import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cstdint>
extern "C" void row_mean(const float* x, float* y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        for (int64_t c = 0; c < cols; ++c) s += x[r * cols + c];
        y[r] = (float)(s / cols) * 1e-3f;
    }
}
"""
_lib = native.load(SRC, {"row_mean": [native.PTR, native.PTR, native.I64, native.I64]})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape[0])
        _lib.row_mean(native.ptr(x), native.ptr(out), x.shape[0], x.shape[1])
        return out
