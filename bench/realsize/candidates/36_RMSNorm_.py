# Honest CUDA candidate for KernelBench level1 36_RMSNorm_: RMS over the feature dimension of a
# (B, F, *spatial) tensor. Each thread owns four neighbouring spatial positions (float4), reads its
# F values once for the sum of squares and again (from cache) to scale them.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void rmsnorm_vec4(const float4* __restrict__ x, float4* __restrict__ y, long long B, long long F,
                             long long S4, float eps) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * S4) return;
    long long b = idx / S4, s = idx % S4;
    const float4* p = x + b * F * S4 + s;
    float4* q = y + b * F * S4 + s;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (long long f = 0; f < F; ++f) {
        float4 v = p[f * S4];
        acc.x += v.x * v.x; acc.y += v.y * v.y; acc.z += v.z * v.z; acc.w += v.w * v.w;
    }
    const float inv_f = 1.f / (float)F;
    float4 r;
    r.x = 1.f / sqrtf(acc.x * inv_f + eps); r.y = 1.f / sqrtf(acc.y * inv_f + eps);
    r.z = 1.f / sqrtf(acc.z * inv_f + eps); r.w = 1.f / sqrtf(acc.w * inv_f + eps);
    for (long long f = 0; f < F; ++f) {
        float4 v = p[f * S4];
        v.x *= r.x; v.y *= r.y; v.z *= r.z; v.w *= r.w;
        q[f * S4] = v;
    }
}

torch::Tensor rmsnorm_forward(torch::Tensor x, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() >= 2, "expects a float32 CUDA tensor (B, F, ...)");
    x = x.contiguous();
    long long B = x.size(0), F = x.size(1);
    long long S = x.numel() / (B * F);
    TORCH_CHECK(S % 4 == 0, "spatial size must be a multiple of 4");
    auto y = torch::empty_like(x);
    long long n = B * (S / 4);
    rmsnorm_vec4<<<(n + 255) / 256, 256>>>(reinterpret_cast<const float4*>(x.data_ptr<float>()),
                                           reinterpret_cast<float4*>(y.data_ptr<float>()), B, F, S / 4, (float)eps);
    return y;
}
"""

cpp_source = "torch::Tensor rmsnorm_forward(torch::Tensor x, double eps);"

rms_ext = load_inline(name="realsize_rmsnorm", cpp_sources=cpp_source, cuda_sources=cuda_source,
                      functions=["rmsnorm_forward"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_ext.rmsnorm_forward(x, self.eps)
