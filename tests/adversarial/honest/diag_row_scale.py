import torch
import torch.nn as nn

from kforge_worker import native

# diag(a) @ B == a[:, None] * B exactly: n^2 multiplications instead of 2 n^3 FLOPs. One thread is
# plenty for a single pass over 16 MB.
SRC = r"""
#include <cstdint>
extern "C" void row_scale(const float* a, const float* b, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float s = a[i];
        for (int64_t j = 0; j < n; ++j) y[i * n + j] = s * b[i * n + j];
    }
}
"""
_lib = native.load(SRC, {"row_scale": [native.PTR, native.PTR, native.PTR, native.I64]})


class ModelNew(nn.Module):
    def forward(self, a, b):
        a, b = a.contiguous(), b.contiguous()
        out = torch.empty_like(b)
        _lib.row_scale(native.ptr(a), native.ptr(b), native.ptr(out), b.shape[0])
        return out
