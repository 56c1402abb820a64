# Honest CUDA candidate for KernelBench level2 63_Gemm_ReLU_Divide: cuBLAS GEMM (torch.mm, fp32), then
# one fused kernel: + bias, ReLU, / divisor, in place.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void bias_relu_div(float4* __restrict__ y, const float4* __restrict__ bias, long long rows, long long cols4,
                              float divisor) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * cols4) return;
    float4 v = y[idx], b = bias[idx % cols4];
    v.x = fmaxf(v.x + b.x, 0.f) / divisor; v.y = fmaxf(v.y + b.y, 0.f) / divisor;
    v.z = fmaxf(v.z + b.z, 0.f) / divisor; v.w = fmaxf(v.w + b.w, 0.f) / divisor;
    y[idx] = v;
}

torch::Tensor bias_relu_div_(torch::Tensor y, torch::Tensor bias, double divisor) {
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.dim() == 2 && y.size(1) % 4 == 0, "expects a contiguous (M, N%4==0) CUDA tensor");
    long long rows = y.size(0), cols4 = y.size(1) / 4, n = rows * cols4;
    bias_relu_div<<<(n + 255) / 256, 256>>>(reinterpret_cast<float4*>(y.data_ptr<float>()),
                                             reinterpret_cast<const float4*>(bias.contiguous().data_ptr<float>()), rows,
                                             cols4, (float)divisor);
    return y;
}
"""

cpp_source = "torch::Tensor bias_relu_div_(torch::Tensor y, torch::Tensor bias, double divisor);"

epilogue_ext = load_inline(name="realsize_gemm_relu_div", cpp_sources=cpp_source, cuda_sources=cuda_source,
                           functions=["bias_relu_div_"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x):
        return epilogue_ext.bias_relu_div_(torch.mm(x, self.linear.weight.t()), self.linear.bias, self.divisor)
