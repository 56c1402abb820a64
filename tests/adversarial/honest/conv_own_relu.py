import torch.nn as nn
import torch.nn.functional as F

from kforge_worker import native

SRC = r"""
#include <cstdint>
extern "C" void relu_inplace(float* y, int64_t n) {
    #pragma omp parallel for simd
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0.f ? y[i] : 0.f;
}
"""
_lib = native.load(SRC, {"relu_inplace": [native.PTR, native.I64]})


class ModelNew(nn.Module):
    """The reference's convolution stays a library call (allowed by the target); the ReLU is its own."""

    def __init__(self, channels, features):
        super().__init__()
        self.conv = nn.Conv2d(channels, features, 3, padding=1)

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias, padding=1).contiguous()
        _lib.relu_inplace(native.ptr(y), y.numel())
        return y
