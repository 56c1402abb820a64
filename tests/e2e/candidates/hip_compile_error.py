import torch.nn as nn

from kforge_worker import hip

_mod = hip.build(r"""
#include <hip/hip_runtime.h>
extern "C" __global__ void relu(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], undeclared_zero);
}
""")


class ModelNew(nn.Module):
    def forward(self, x):
        return x
