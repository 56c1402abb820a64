import torch
import torch.nn as nn

from kforge_worker import cuda

# 2048 threads per block, over the hardware limit of 1024: the launch itself is refused.
SRC = r"""
extern "C" __global__ void copy(const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"""
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _mod.copy(grid=(x.numel() + 2047) // 2048, block=2048, args=(x, out, x.numel()))
        return out
