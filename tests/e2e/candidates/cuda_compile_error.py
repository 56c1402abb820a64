import torch.nn as nn

from kforge_worker import cuda

_mod = cuda.compile(r"""
extern "C" __global__ void relu(const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], undeclared_zero);
}
""")


class ModelNew(nn.Module):
    def forward(self, x):
        return x
