import torch
import torch.nn as nn

from kforge_worker import native

# In-place work on its own buffer: one output tensor, allocated once and overwritten by every call.
SRC = r"""
#include <cstdint>
extern "C" void relu_inplace(float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0.f ? y[i] : 0.f;
}
"""
_lib = native.load(SRC, {"relu_inplace": [native.PTR, native.I64]})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = None

    def forward(self, x):
        if self.out is None or self.out.shape != x.shape:
            self.out = torch.empty_like(x)
        self.out.copy_(x)
        _lib.relu_inplace(native.ptr(self.out), self.out.numel())
        return self.out
