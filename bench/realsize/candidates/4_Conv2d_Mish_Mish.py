# Honest CUDA candidate for KernelBench level2 4_Conv2d_Mish_Mish: the convolution through cuDNN
# (torch.conv2d), then Mish applied twice in one fused in-place kernel (softplus threshold 20, as torch).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float mish(float x) {
    float sp = x > 20.f ? x : log1pf(expf(x));
    return x * tanhf(sp);
}

__global__ void mish_mish(float4* __restrict__ y, long long n4) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n4) return;
    float4 v = y[idx];
    v.x = mish(mish(v.x)); v.y = mish(mish(v.y)); v.z = mish(mish(v.z)); v.w = mish(mish(v.w));
    y[idx] = v;
}

torch::Tensor mish_mish_(torch::Tensor y) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.numel() % 4 == 0, "expects a contiguous CUDA tensor, numel % 4 == 0");
    long long n4 = y.numel() / 4;
    mish_mish<<<(n4 + 255) / 256, 256>>>(reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
    return y;
}
"""

cpp_source = "torch::Tensor mish_mish_(torch::Tensor y);"

epilogue_ext = load_inline(name="realsize_conv_mish_mish", cpp_sources=cpp_source, cuda_sources=cuda_source,
                           functions=["mish_mish_"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return epilogue_ext.mish_mish_(torch.conv2d(x, self.conv.weight, self.conv.bias).contiguous())
