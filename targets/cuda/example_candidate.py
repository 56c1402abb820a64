import torch
import torch.nn as nn

from kforge_kernels import cuda

# CUDA C++ built by NVRTC for sm_90a (about 0.1-1 s cold, milliseconds when cached across runs).
# Kernels are extern "C" __global__; scalars are converted to the declared types (long long, float).
# Each thread handles 4 consecutive floats with one 16-byte load and store (coalesced across the warp).
SRC = r"""
extern "C" __global__ void __launch_bounds__(256)
scale_bias_relu(const float4* __restrict__ x, const float* __restrict__ bias, float4* __restrict__ y,
                long long n4, int cols, float scale) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
         i += (long long)gridDim.x * blockDim.x) {
        float4 v = x[i];
        int c = (int)((i * 4) % cols);            // cols % 4 == 0: the 4 lanes share a row
        v.x = fmaxf(v.x * scale + bias[c], 0.f);
        v.y = fmaxf(v.y * scale + bias[c + 1], 0.f);
        v.z = fmaxf(v.z * scale + bias[c + 2], 0.f);
        v.w = fmaxf(v.w * scale + bias[c + 3], 0.f);
        y[i] = v;
    }
}
"""
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features) * 0.1)  # same name and shape as the reference
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()  # kernels get raw pointers: non-contiguous tensors are refused
        bias = self.bias.detach().contiguous()
        cols = bias.numel()
        assert cols % 4 == 0 and x.numel() % 4 == 0
        out = torch.empty_like(x)
        n4 = x.numel() // 4
        blocks = min((n4 + 255) // 256, 132 * 16)  # grid-stride loop: a few waves over 132 SMs
        _mod.scale_bias_relu(grid=blocks, block=256, args=(x, bias, out, n4, cols, self.scale))
        return out
