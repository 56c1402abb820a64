# Honest: a softmax whose row maxima and sums go to a scratch buffer kept per device and row count, made
# once and reused by every call. A cache of workspaces keyed on metadata: static.output_caching allows it.
import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cmath>
#include <cstdint>
extern "C" void softmax(const float* x, float* y, float* scratch, int64_t rows, int64_t cols) {
    #pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = xr[0];
        for (int64_t c = 1; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        double s = 0;
        for (int64_t c = 0; c < cols; ++c) { yr[c] = std::exp(xr[c] - m); s += yr[c]; }
        scratch[2 * r] = m;
        scratch[2 * r + 1] = (float)(1.0 / s);
        for (int64_t c = 0; c < cols; ++c) yr[c] *= scratch[2 * r + 1];
    }
}
"""
_lib = native.load(SRC, {"softmax": [native.PTR, native.PTR, native.PTR, native.I64, native.I64]})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scratch = {}

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        work = self.scratch.get((x.device, rows))
        if work is None:
            work = self.scratch.setdefault((x.device, rows), torch.empty(2 * rows, device=x.device))
        out = torch.empty_like(x)
        _lib.softmax(native.ptr(x), native.ptr(out), native.ptr(work), rows, cols)
        return out
