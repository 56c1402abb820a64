import torch
import torch.nn as nn

from kforge_worker import cuda

# Every thread executes a trap instruction: the kernel aborts and the context is lost.
SRC = r"""
extern "C" __global__ void trap(const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
    __trap();
}
"""
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _mod.trap(grid=(x.numel() + 255) // 256, block=256, args=(x, out, x.numel()))
        return out
