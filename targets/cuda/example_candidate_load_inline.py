import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The same kernel KernelBench-style, through torch.utils.cpp_extension.load_inline: works on
# torch::Tensor directly, but building against the torch headers takes 30-60 s cold (kforge caches
# the build by its content; the kforge_kernels.cuda fast path takes under a second).
CUDA_SRC = r"""
#include <torch/extension.h>

__global__ void scale_bias_relu_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                       float* __restrict__ y, long long n, int cols, float scale) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i] * scale + bias[i % cols], 0.f);
}

torch::Tensor scale_bias_relu(torch::Tensor x, torch::Tensor bias, double scale) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && bias.is_contiguous(), "contiguous CUDA tensors expected");
    auto y = torch::empty_like(x);
    const long long n = x.numel();
    const int threads = 256;
    const int blocks = (int)((n + threads - 1) / threads);
    scale_bias_relu_kernel<<<blocks, threads>>>(x.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                                                n, (int)bias.numel(), (float)scale);
    return y;
}
"""
CPP_SRC = "torch::Tensor scale_bias_relu(torch::Tensor x, torch::Tensor bias, double scale);"

_ext = load_inline(
    name="kforge_example_scale_bias_relu_cuda",
    cpp_sources=CPP_SRC,
    cuda_sources=CUDA_SRC,
    functions=["scale_bias_relu"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features) * 0.1)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.scale_bias_relu(x.contiguous(), self.bias.detach().contiguous(), self.scale)
