# Honest CUDA candidate for KernelBench level1 96_HuberLoss: smooth L1 loss (beta 1, mean) as one
# pass over both inputs (float4, per-thread partial sums, block reduction) and a second tiny kernel
# that adds the per-block partials in double.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float huber(float p, float t) {
    float d = fabsf(p - t);
    return d < 1.f ? 0.5f * d * d : d - 0.5f;
}

__global__ void huber_partials(const float4* __restrict__ p, const float4* __restrict__ t, long long n4,
                               double* __restrict__ partials) {
    float acc = 0.f;
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 a = p[i], b = t[i];
        acc += (huber(a.x, b.x) + huber(a.y, b.y)) + (huber(a.z, b.z) + huber(a.w, b.w));
    }
    double d = acc;
    for (int off = 16; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffff, d, off);
    __shared__ double warp_sums[32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) warp_sums[warp] = d;
    __syncthreads();
    if (warp == 0) {
        d = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0;
        for (int off = 16; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffff, d, off);
        if (lane == 0) partials[blockIdx.x] = d;
    }
}

__global__ void finish_mean(const double* __restrict__ partials, int count, const float* __restrict__ pt,
                            const float* __restrict__ tt, long long tail_start, long long n, float* __restrict__ out) {
    __shared__ double s[256];
    double d = 0.0;
    for (int i = threadIdx.x; i < count; i += blockDim.x) d += partials[i];
    for (long long i = tail_start + threadIdx.x; i < n; i += blockDim.x) d += huber(pt[i], tt[i]);
    s[threadIdx.x] = d;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = (float)(s[0] / (double)n);
}

torch::Tensor huber_forward(torch::Tensor p, torch::Tensor t) {
    TORCH_CHECK(p.is_cuda() && t.is_cuda() && p.scalar_type() == torch::kFloat32 && t.scalar_type() == torch::kFloat32,
                "expects float32 CUDA tensors");
    TORCH_CHECK(p.sizes() == t.sizes(), "predictions and targets must have the same shape");
    p = p.contiguous(); t = t.contiguous();
    long long n = p.numel(), n4 = n / 4;
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, p.get_device());
    int blocks = (int)std::max<long long>(1, std::min<long long>((n4 + 255) / 256, (long long)sms * 8));
    auto partials = torch::empty({blocks}, p.options().dtype(torch::kFloat64));
    auto out = torch::empty({}, p.options());
    huber_partials<<<blocks, 256>>>(reinterpret_cast<const float4*>(p.data_ptr<float>()),
                                    reinterpret_cast<const float4*>(t.data_ptr<float>()), n4,
                                    partials.data_ptr<double>());
    finish_mean<<<1, 256>>>(partials.data_ptr<double>(), blocks, p.data_ptr<float>(), t.data_ptr<float>(), n4 * 4, n,
                            out.data_ptr<float>());
    return out;
}
"""

cpp_source = "torch::Tensor huber_forward(torch::Tensor p, torch::Tensor t);"

huber_ext = load_inline(name="realsize_huber", cpp_sources=cpp_source, cuda_sources=cuda_source,
                        functions=["huber_forward"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return huber_ext.huber_forward(predictions, targets)
