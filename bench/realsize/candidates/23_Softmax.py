# Honest CUDA candidate for KernelBench level1 23_Softmax: one block per row, an online max/sum pass
# (one read) and a normalising pass (one read, one write), float4 throughout.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__device__ __forceinline__ void combine(float& m, float& s, float om, float os) {
    float nm = fmaxf(m, om);
    s = (m == -INFINITY ? 0.f : s * __expf(m - nm)) + (om == -INFINITY ? 0.f : os * __expf(om - nm));
    m = nm;
}

template <int THREADS>
__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, long long cols) {
    const long long row = blockIdx.x;
    const float4* xr = reinterpret_cast<const float4*>(x + row * cols);
    float4* yr = reinterpret_cast<float4*>(y + row * cols);
    const long long c4 = cols / 4;
    float m = -INFINITY, s = 0.f;
    for (long long i = threadIdx.x; i < c4; i += THREADS) {
        float4 v = xr[i];
        float lm = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
        float ls = __expf(v.x - lm) + __expf(v.y - lm) + __expf(v.z - lm) + __expf(v.w - lm);
        combine(m, s, lm, ls);
    }
    for (int off = 16; off > 0; off >>= 1) {
        float om = __shfl_xor_sync(0xffffffff, m, off);
        float os = __shfl_xor_sync(0xffffffff, s, off);
        combine(m, s, om, os);
    }
    __shared__ float sm[THREADS / 32], ss[THREADS / 32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        m = lane < THREADS / 32 ? sm[lane] : -INFINITY;
        s = lane < THREADS / 32 ? ss[lane] : 0.f;
        for (int off = 16; off > 0; off >>= 1) {
            float om = __shfl_xor_sync(0xffffffff, m, off);
            float os = __shfl_xor_sync(0xffffffff, s, off);
            combine(m, s, om, os);
        }
        if (lane == 0) { sm[0] = m; ss[0] = s; }
    }
    __syncthreads();
    const float rmax = sm[0], rinv = 1.f / ss[0];
    for (long long i = threadIdx.x; i < c4; i += THREADS) {
        float4 v = xr[i];
        v.x = __expf(v.x - rmax) * rinv; v.y = __expf(v.y - rmax) * rinv;
        v.z = __expf(v.z - rmax) * rinv; v.w = __expf(v.w - rmax) * rinv;
        yr[i] = v;
    }
}

torch::Tensor softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "expects a 2-D float32 CUDA tensor");
    x = x.contiguous();
    TORCH_CHECK(x.size(1) % 4 == 0, "row length must be a multiple of 4");
    auto y = torch::empty_like(x);
    softmax_rows<1024><<<x.size(0), 1024>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
    return y;
}
"""

cpp_source = "torch::Tensor softmax_forward(torch::Tensor x);"

softmax_ext = load_inline(name="realsize_softmax", cpp_sources=cpp_source, cuda_sources=cuda_source,
                          functions=["softmax_forward"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_ext.softmax_forward(x)
