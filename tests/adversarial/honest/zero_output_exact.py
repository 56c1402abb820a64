import torch
import torch.nn as nn

from kforge_worker import native

# The reference's output is zero whatever the input: the exact kernel writes zeros and reads nothing.
SRC = r"""
#include <cstdint>
extern "C" void zeros(float* y, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = 0.f; }
"""
_lib = native.load(SRC, {"zeros": [native.PTR, native.I64]})


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape[0], dtype=x.dtype)
        _lib.zeros(native.ptr(out), out.numel())
        return out
