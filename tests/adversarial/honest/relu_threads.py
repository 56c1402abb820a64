import torch
import torch.nn as nn

from kforge_worker import native

# OpenMP threads inside the kernel: joined before the call returns, so nothing escapes the timer.
SRC = r"""
#include <cstdint>
#include <omp.h>
extern "C" void relu(const float* x, float* y, int64_t n) {
    #pragma omp parallel
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
        for (int64_t i = lo; i < hi; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
    }
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64]})


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
