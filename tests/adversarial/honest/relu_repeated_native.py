# Honest, and slow on purpose: the halved_timer attack's kernel (about 60 ms a call) with
# kforge's own timer, so that its blocks are long enough for the clock floor to judge them.
import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64]})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        for _ in range(3600):
            _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
