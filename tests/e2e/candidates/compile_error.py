import torch.nn as nn

from kforge_worker import native

SOURCE = r"""
extern "C" void add(const float* a, float* out, long n) {
    for (long i = 0; i < n; ++i) out[i] = a[i] + undefined_variable;
}
"""
lib = native.load(SOURCE, {"add": [native.PTR, native.PTR, native.I64]})


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()

    def forward(self, a, b):
        return a
