import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# RMSNorm over dim=1 of an NCHW-like tensor, fully fused into one pass:
# each thread owns one (b, spatial) position, loads its C=64 channel values into registers
# (coalesced across the warp since spatial is the contiguous dim), reduces sum of squares,
# and writes x / sqrt(mean + eps). HBM traffic = 1 read + 1 write (the minimum).

rmsnorm_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <math.h>

template <int C>
__global__ void __launch_bounds__(256, 3)
rmsnorm_reg_kernel(const float* __restrict__ x, float* __restrict__ y,
                   long long HW, long long N, float eps) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N) return;
    const long long b = p / HW;
    const long long s = p - b * HW;
    const long long base = b * (long long)C * HW + s;
    const float* xp = x + base;
    float* yp = y + base;

    float v[C];
    #pragma unroll
    for (int c = 0; c < C; ++c) v[c] = __ldcs(xp + (long long)c * HW);

    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    #pragma unroll
    for (int c = 0; c < C; c += 4) {
        a0 = fmaf(v[c + 0], v[c + 0], a0);
        if (c + 1 < C) a1 = fmaf(v[c + 1], v[c + 1], a1);
        if (c + 2 < C) a2 = fmaf(v[c + 2], v[c + 2], a2);
        if (c + 3 < C) a3 = fmaf(v[c + 3], v[c + 3], a3);
    }
    const float ss = (a0 + a1) + (a2 + a3);
    const float ms = ss / (float)C;
    const float inv = 1.0f / sqrtf(ms + eps);

    #pragma unroll
    for (int c = 0; c < C; ++c) __stcs(yp + (long long)c * HW, v[c] * inv);
}

// Generic fallback for arbitrary channel counts (second read mostly hits L2).
__global__ void __launch_bounds__(256)
rmsnorm_generic_kernel(const float* __restrict__ x, float* __restrict__ y,
                       long long C, long long HW, long long N, float eps) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= N) return;
    const long long b = p / HW;
    const long long s = p - b * HW;
    const long long base = b * C * HW + s;
    const float* xp = x + base;
    float* yp = y + base;
    float acc = 0.f;
    for (long long c = 0; c < C; ++c) {
        float t = xp[c * HW];
        acc = fmaf(t, t, acc);
    }
    const float inv = 1.0f / sqrtf(acc / (float)C + eps);
    for (long long c = 0; c < C; ++c) yp[c * HW] = xp[c * HW] * inv;
}

torch::Tensor rmsnorm_cuda(torch::Tensor x, double eps) {
    TORCH_CHECK(x.is_cuda(), "x must be CUDA");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.dim() >= 2, "x must have at least 2 dims");
    x = x.contiguous();
    auto y = torch::empty_like(x);
    const long long B = x.size(0);
    const long long C = x.size(1);
    long long HW = 1;
    for (int d = 2; d < x.dim(); ++d) HW *= x.size(d);
    const long long N = B * HW;
    if (N == 0 || C == 0) return y;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const int threads = 256;
    const long long blocks = (N + threads - 1) / threads;
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const float feps = (float)eps;
    if (C == 64) {
        rmsnorm_reg_kernel<64><<<(unsigned)blocks, threads, 0, stream>>>(xp, yp, HW, N, feps);
    } else if (C == 32) {
        rmsnorm_reg_kernel<32><<<(unsigned)blocks, threads, 0, stream>>>(xp, yp, HW, N, feps);
    } else if (C == 16) {
        rmsnorm_reg_kernel<16><<<(unsigned)blocks, threads, 0, stream>>>(xp, yp, HW, N, feps);
    } else {
        rmsnorm_generic_kernel<<<(unsigned)blocks, threads, 0, stream>>>(xp, yp, C, HW, N, feps);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

rmsnorm_cpp_source = "torch::Tensor rmsnorm_cuda(torch::Tensor x, double eps);"

rmsnorm_ext = load_inline(
    name="rmsnorm_fused_reg_ext",
    cpp_sources=rmsnorm_cpp_source,
    cuda_sources=rmsnorm_source,
    functions=["rmsnorm_cuda"],
    verbose=False,
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    """
    RMS Normalization over dim=1, single fused CUDA kernel.
    """
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps
        self.ext = rmsnorm_ext

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (not x.is_cuda) or x.dtype != torch.float32 or x.dim() < 2:
            rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
            return x / rms
        return self.ext.rmsnorm_cuda(x, float(self.eps))
