import torch
import torch.nn as nn

from kforge_worker import cuda

# Writes far outside the output buffer: an illegal address, reported at the next synchronisation.
SRC = r"""
extern "C" __global__ void wild_store(const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i + (1ll << 36)] = x[i];
}
"""
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _mod.wild_store(grid=(x.numel() + 255) // 256, block=256, args=(x, out, x.numel()))
        return out
