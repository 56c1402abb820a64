# Honest CUDA candidate for KernelBench level1 47_Sum_reduction_over_a_dimension: sum over the middle
# dimension of a (B, R, C) tensor. Consecutive threads take consecutive columns (coalesced rows);
# each thread walks R rows with four independent accumulators.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void sum_middle(const float* __restrict__ x, float* __restrict__ y, long long B, long long R, long long C) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * C) return;
    long long b = idx / C, c = idx % C;
    const float* p = x + b * R * C + c;
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    long long r = 0;
    for (; r + 3 < R; r += 4) {
        a0 += p[(r + 0) * C]; a1 += p[(r + 1) * C]; a2 += p[(r + 2) * C]; a3 += p[(r + 3) * C];
    }
    for (; r < R; ++r) a0 += p[r * C];
    y[b * C + c] = (a0 + a1) + (a2 + a3);
}

torch::Tensor sum_dim1(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 3, "expects a 3-D float32 CUDA tensor");
    x = x.contiguous();
    long long B = x.size(0), R = x.size(1), C = x.size(2);
    auto y = torch::empty({B, 1, C}, x.options());
    long long n = B * C;
    sum_middle<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), B, R, C);
    return y;
}
"""

cpp_source = "torch::Tensor sum_dim1(torch::Tensor x);"

sum_ext = load_inline(name="realsize_sum_dim1", cpp_sources=cpp_source, cuda_sources=cuda_source,
                      functions=["sum_dim1"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dim != 1 or x.dim() != 3:
            raise ValueError("this kernel reduces dimension 1 of a 3-D tensor")
        return sum_ext.sum_dim1(x)
