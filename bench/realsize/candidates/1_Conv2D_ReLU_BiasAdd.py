# Honest CUDA candidate for KernelBench level2 1_Conv2D_ReLU_BiasAdd: the convolution through cuDNN
# (torch.conv2d with the conv's own bias), then one fused kernel: ReLU and the per-channel bias, in place.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_channel_bias(float4* __restrict__ y, const float* __restrict__ bias, long long n4, long long hw4,
                                  long long channels) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n4) return;
    float b = bias[(idx / hw4) % channels];
    float4 v = y[idx];
    v.x = fmaxf(v.x, 0.f) + b; v.y = fmaxf(v.y, 0.f) + b; v.z = fmaxf(v.z, 0.f) + b; v.w = fmaxf(v.w, 0.f) + b;
    y[idx] = v;
}

torch::Tensor relu_bias_(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.dim() == 4, "expects a contiguous NCHW CUDA tensor");
    long long hw = y.size(2) * y.size(3);
    TORCH_CHECK(hw % 4 == 0, "H*W must be a multiple of 4");
    long long n4 = y.numel() / 4;
    relu_channel_bias<<<(n4 + 255) / 256, 256>>>(reinterpret_cast<float4*>(y.data_ptr<float>()),
                                                  bias.contiguous().data_ptr<float>(), n4, hw / 4, y.size(1));
    return y;
}
"""

cpp_source = "torch::Tensor relu_bias_(torch::Tensor y, torch::Tensor bias);"

epilogue_ext = load_inline(name="realsize_conv_relu_bias", cpp_sources=cpp_source, cuda_sources=cuda_source,
                           functions=["relu_bias_"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = torch.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        return epilogue_ext.relu_bias_(y, self.bias)
