# Honest CUDA candidate for KernelBench level2 12_Gemm_Multiply_LeakyReLU: the GEMM through cuBLAS
# (torch.mm, fp32, no bias), then one fused epilogue kernel: + bias, * multiplier, LeakyReLU, in place.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void bias_scale_leaky(float4* __restrict__ y, const float4* __restrict__ bias, long long rows, long long cols4,
                                 float multiplier, float slope) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * cols4) return;
    float4 v = y[idx], b = bias[idx % cols4];
    v.x = (v.x + b.x) * multiplier; v.y = (v.y + b.y) * multiplier;
    v.z = (v.z + b.z) * multiplier; v.w = (v.w + b.w) * multiplier;
    v.x = v.x > 0.f ? v.x : v.x * slope; v.y = v.y > 0.f ? v.y : v.y * slope;
    v.z = v.z > 0.f ? v.z : v.z * slope; v.w = v.w > 0.f ? v.w : v.w * slope;
    y[idx] = v;
}

torch::Tensor epilogue_(torch::Tensor y, torch::Tensor bias, double multiplier, double slope) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.dim() == 2 && y.size(1) % 4 == 0, "expects a contiguous (M, N%4==0) CUDA tensor");
    long long rows = y.size(0), cols4 = y.size(1) / 4, n = rows * cols4;
    bias_scale_leaky<<<(n + 255) / 256, 256>>>(reinterpret_cast<float4*>(y.data_ptr<float>()),
                                                reinterpret_cast<const float4*>(bias.contiguous().data_ptr<float>()),
                                                rows, cols4, (float)multiplier, (float)slope);
    return y;
}
"""

cpp_source = "torch::Tensor epilogue_(torch::Tensor y, torch::Tensor bias, double multiplier, double slope);"

epilogue_ext = load_inline(name="realsize_gemm_mul_leaky", cpp_sources=cpp_source, cuda_sources=cuda_source,
                           functions=["epilogue_"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        y = torch.mm(x, self.gemm.weight.t())
        return epilogue_ext.epilogue_(y, self.gemm.bias, self.multiplier, self.negative_slope)
