import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# GEMM (1024 x 8192 x 8192) + *multiplier + LeakyReLU.
#
# FP32-accurate "3xTF32" GEMM on the tensor cores:
#   x = xb + xs, W = Wb + Ws  with xb, Wb, xs, Ws exactly representable in TF32 (custom split kernel)
#   x W^T ~= xb Wb^T + xb Ws^T + xs Wb^T   (dropped terms ~2^-22 relative -> fp32-level accuracy)
# The three products are evaluated as ONE tensor-core GEMM with K' = 3K on concatenated operands
#   A = [xb | xb | xs] (M x 3K),  B = [Wb | Ws | Wb] (N x 3K)
# (TF32-exact inputs => every product is exact, accumulation in fp32). The split weight is cached
# and rebuilt only when the parameter changes. Bias is added in the GEMM epilogue (addmm, fp32),
# multiplier + LeakyReLU are fused into one in-place vectorized CUDA kernel.

src = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

__device__ __forceinline__ float tf32_rna(float x) {
    uint32_t u = __float_as_uint(x);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    return __uint_as_float(u);
}

// dst row r (length 3*K) = mode 0: [big | big | small],  mode 1: [big | small | big]
__global__ void split3_kernel(const float4* __restrict__ src, float4* __restrict__ dst,
                              long long total4, int K4, int mode) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; idx < total4; idx += stride) {
        const long long r = idx / K4;
        const int c = (int)(idx - r * K4);
        const float4 v = __ldg(src + idx);
        float4 b, s;
        b.x = tf32_rna(v.x); s.x = tf32_rna(v.x - b.x);
        b.y = tf32_rna(v.y); s.y = tf32_rna(v.y - b.y);
        b.z = tf32_rna(v.z); s.z = tf32_rna(v.z - b.z);
        b.w = tf32_rna(v.w); s.w = tf32_rna(v.w - b.w);
        float4* d = dst + r * 3LL * K4;
        d[c] = b;
        if (mode == 0) { d[K4 + c] = b; d[2 * K4 + c] = s; }
        else           { d[K4 + c] = s; d[2 * K4 + c] = b; }
    }
}

torch::Tensor split3_cuda(torch::Tensor x, int64_t mode) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "bad input");
    x = x.contiguous();
    const int64_t R = x.size(0), K = x.size(1);
    TORCH_CHECK(K % 4 == 0, "K must be a multiple of 4");
    auto out = torch::empty({R, 3 * K}, x.options());
    const long long total4 = R * (K / 4);
    if (total4 == 0) return out;
    const int threads = 256;
    long long blocks = (total4 + threads - 1) / threads;
    if (blocks > 132LL * 64) blocks = 132LL * 64;
    split3_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const float4*>(x.data_ptr<float>()),
        reinterpret_cast<float4*>(out.data_ptr<float>()), total4, (int)(K / 4), (int)mode);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

__device__ __forceinline__ float mul_leaky(float v, float m, float slope) {
    v *= m;
    return v >= 0.f ? v : v * slope;
}

__global__ void mul_leaky_vec_kernel(float4* __restrict__ y, long long n4, float m, float slope) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = y[i];
        v.x = mul_leaky(v.x, m, slope); v.y = mul_leaky(v.y, m, slope);
        v.z = mul_leaky(v.z, m, slope); v.w = mul_leaky(v.w, m, slope);
        y[i] = v;
    }
}

__global__ void mul_leaky_scalar_kernel(float* __restrict__ y, long long n, float m, float slope) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = mul_leaky(y[i], m, slope);
}

torch::Tensor mul_leaky_(torch::Tensor y, double m, double slope) {
    TORCH_CHECK(y.is_cuda() && y.scalar_type() == torch::kFloat32 && y.is_contiguous(), "bad y");
    const long long n = y.numel();
    if (n == 0) return y;
    const int threads = 256;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    float* p = y.data_ptr<float>();
    if ((n % 4 == 0) && ((reinterpret_cast<uintptr_t>(p) & 15) == 0)) {
        const long long n4 = n / 4;
        long long blocks = (n4 + threads - 1) / threads;
        if (blocks > 132LL * 32) blocks = 132LL * 32;
        mul_leaky_vec_kernel<<<(unsigned)blocks, threads, 0, stream>>>(
            reinterpret_cast<float4*>(p), n4, (float)m, (float)slope);
    } else {
        long long blocks = (n + threads - 1) / threads;
        if (blocks > 132LL * 32) blocks = 132LL * 32;
        mul_leaky_scalar_kernel<<<(unsigned)blocks, threads, 0, stream>>>(p, n, (float)m, (float)slope);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_src = (
    "torch::Tensor split3_cuda(torch::Tensor x, int64_t mode);\n"
    "torch::Tensor mul_leaky_(torch::Tensor y, double m, double slope);\n"
)

ext = load_inline(
    name="gemm3xtf32_mul_leaky_ext",
    cpp_sources=cpp_src,
    cuda_sources=src,
    functions=["split3_cuda", "mul_leaky_"],
    verbose=False,
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    """
    Gemm (fp32-accurate 3xTF32 on tensor cores) + fused multiply/LeakyReLU CUDA epilogue.
    """
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope
        self.ext = ext
        self._wkey = None
        self._wcat = None

    def _split_weight(self):
        w = self.gemm.weight
        key = (w.data_ptr(), w._version, str(w.device), tuple(w.shape))
        if self._wkey != key or self._wcat is None:
            with torch.no_grad():
                self._wcat = self.ext.split3_cuda(w.detach().contiguous(), 1)
            self._wkey = key
        return self._wcat

    def forward(self, x):
        w = self.gemm.weight
        b = self.gemm.bias
        if (not x.is_cuda) or x.dtype != torch.float32 or w.dtype != torch.float32 \
                or x.dim() != 2 or (x.shape[1] % 4) != 0:
            y = self.gemm(x) * self.multiplier
            return F.leaky_relu(y, self.negative_slope)
        with torch.no_grad():
            xcat = self.ext.split3_cuda(x.contiguous(), 0)
            wcat = self._split_weight()
            prev = torch.get_float32_matmul_precision()
            torch.set_float32_matmul_precision("high")
            try:
                if b is not None:
                    y = torch.addmm(b.detach(), xcat, wcat.t())
                else:
                    y = torch.mm(xcat, wcat.t())
            finally:
                torch.set_float32_matmul_precision(prev)
            y = y.contiguous()
            self.ext.mul_leaky_(y, float(self.multiplier), float(self.negative_slope))
        return y
