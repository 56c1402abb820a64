import torch
import torch.nn as nn

from kforge_worker import cuda

# Spins on a flag that nothing ever sets: the kernel never finishes; only killing the process ends it.
SRC = r"""
extern "C" __global__ void spin(const float* x, float* y, volatile int* flag, long long n) {
    while (*flag == 0) { }
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"""
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        flag = torch.zeros(1, dtype=torch.int32, device=x.device)
        _mod.spin(grid=(x.numel() + 255) // 256, block=256, args=(x, out, flag, x.numel()))
        return out
