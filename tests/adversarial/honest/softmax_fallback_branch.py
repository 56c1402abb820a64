import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cmath>
#include <cstdint>
extern "C" void softmax(const float* x, float* y, int64_t rows, int64_t cols) {
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = xr[0];
        for (int64_t c = 1; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        float s = 0.f;
        for (int64_t c = 0; c < cols; ++c) { yr[c] = std::exp(xr[c] - m); s += yr[c]; }
        const float inv = 1.f / s;
        for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
    }
}
"""
_lib = native.load(SRC, {"softmax": [native.PTR, native.PTR, native.I64, native.I64]})


class ModelNew(nn.Module):
    def forward(self, x):
        # A fallback for what the kernel does not handle (KernelBench-style replies often carry one);
        # it never runs at the problem's inputs.
        if x.dim() != 2 or x.dtype != torch.float32:
            return torch.softmax(x, dim=1)
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.softmax(native.ptr(x), native.ptr(out), x.shape[0], x.shape[1])
        return out
