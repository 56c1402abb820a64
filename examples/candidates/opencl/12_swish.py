import torch
import torch.nn as nn

from kforge_kernels import ocl

SRC = """
__kernel void swish(__global const float* x, __global float* y, long n) {
    long i = (long)get_global_id(0) * 8;
    if (i + 8 <= n) {
        float8 v = vload8(0, x + i);
        vstore8(v / (1.0f + exp(-v)), 0, y + i);
    } else {
        for (; i < n; ++i) y[i] = x[i] / (1.0f + exp(-x[i]));
    }
}
"""
_prog = ocl.build(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _prog.launch("swish", ((n + 7) // 8,), None, x, out, n)
        return out
