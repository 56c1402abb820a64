# Honest: two ReLU kernels (one thread, all threads); the first call at each shape times both and keeps
# the faster one's name under the shape and strides. A cache of autotuning choices keyed on metadata:
# static.output_caching allows it.
import time

import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cstdint>
extern "C" void relu_serial(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
extern "C" void relu_parallel(const float* x, float* y, int64_t n) {
    #pragma omp parallel for simd
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
_lib = native.load(SRC, {"relu_serial": [native.PTR, native.PTR, native.I64],
                         "relu_parallel": [native.PTR, native.PTR, native.I64]})
_KERNELS = {"serial": _lib.relu_serial, "parallel": _lib.relu_parallel}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.choice = {}

    def _tune(self, x, out):
        best, best_s = None, float("inf")
        for name, kernel in _KERNELS.items():
            start = time.perf_counter()
            for _ in range(3):
                kernel(native.ptr(x), native.ptr(out), x.numel())
            spent = time.perf_counter() - start
            if spent < best_s:
                best, best_s = name, spent
        return best

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        if (tuple(x.shape), x.stride(), x.dtype) not in self.choice:
            self.choice[tuple(x.shape), x.stride(), x.dtype] = self._tune(x, out)
        _KERNELS[self.choice[tuple(x.shape), x.stride(), x.dtype]](native.ptr(x), native.ptr(out), x.numel())
        return out
