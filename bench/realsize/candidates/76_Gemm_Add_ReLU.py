# Honest CUDA candidate for KernelBench level2 76_Gemm_Add_ReLU: cuBLAS GEMM (torch.mm, fp32), then
# one fused kernel that adds the bias and applies ReLU in place.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void bias_relu(float4* __restrict__ y, const float4* __restrict__ bias, long long rows, long long cols4) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * cols4) return;
    float4 v = y[idx], b = bias[idx % cols4];
    v.x = fmaxf(v.x + b.x, 0.f); v.y = fmaxf(v.y + b.y, 0.f);
    v.z = fmaxf(v.z + b.z, 0.f); v.w = fmaxf(v.w + b.w, 0.f);
    y[idx] = v;
}

torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.dim() == 2 && y.size(1) % 4 == 0, "expects a contiguous (M, N%4==0) CUDA tensor");
    long long rows = y.size(0), cols4 = y.size(1) / 4, n = rows * cols4;
    bias_relu<<<(n + 255) / 256, 256>>>(reinterpret_cast<float4*>(y.data_ptr<float>()),
                                         reinterpret_cast<const float4*>(bias.contiguous().data_ptr<float>()), rows, cols4);
    return y;
}
"""

cpp_source = "torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor bias);"

epilogue_ext = load_inline(name="realsize_gemm_add_relu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                           functions=["bias_relu_"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return epilogue_ext.bias_relu_(torch.mm(x, self.gemm.weight.t()), self.bias)
