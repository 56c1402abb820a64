import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# Linear (1024 x 8192 x 8192) -> exact GELU -> softmax(dim=1).
#
# GEMM: FP32-accurate "3xTF32" on the tensor cores. x = xb + xs, W = Wb + Ws with every part
# exactly representable in TF32 (custom split kernel); x W^T ~= xb Wb^T + xb Ws^T + xs Wb^T,
# evaluated as ONE tensor-core GEMM with K' = 3K on A = [xb|xb|xs], B = [Wb|Ws|Wb]
# (TF32-exact inputs => exact products, fp32 accumulation; dropped terms ~2^-22 relative).
# The split weight is cached and rebuilt only when the parameter changes; bias goes into addmm.
# Epilogue: one fused CUDA kernel per row (row held in registers): erf-GELU, row max,
# sum of exp, normalize -> a single read and a single write of the GEMM output.

src = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>
#include <math.h>

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

#define GS_THREADS 512

__device__ __forceinline__ float gelu_erf(float v) {
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
}

__device__ __forceinline__ float block_max(float v, float* sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = (lane < GS_THREADS / 32) ? sh[lane] : -INFINITY;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) r = fmaxf(r, __shfl_xor_sync(0xffffffffu, r, o));
    __syncthreads();
    return r;
}

__device__ __forceinline__ float block_sum(float v, float* sh) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = (lane < GS_THREADS / 32) ? sh[lane] : 0.f;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) r += __shfl_xor_sync(0xffffffffu, r, o);
    __syncthreads();
    return r;
}

template <int VPT>
__global__ void __launch_bounds__(GS_THREADS)
gelu_softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int N4) {
    __shared__ float sh[GS_THREADS / 32];
    const int tid = threadIdx.x;
    const long long row = blockIdx.x;
    const float4* xr = reinterpret_cast<const float4*>(x) + row * (long long)N4;
    float4* yr = reinterpret_cast<float4*>(y) + row * (long long)N4;

    float4 v[VPT];
    float m = -INFINITY;
    #pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const int i = k * GS_THREADS + tid;
        if (i < N4) {
            float4 t = __ldcs(xr + i);
            t.x = gelu_erf(t.x); t.y = gelu_erf(t.y); t.z = gelu_erf(t.z); t.w = gelu_erf(t.w);
            v[k] = t;
            m = fmaxf(m, fmaxf(fmaxf(t.x, t.y), fmaxf(t.z, t.w)));
        } else {
            v[k] = make_float4(0.f, 0.f, 0.f, 0.f);
        }
    }
    const float M = block_max(m, sh);

    float s = 0.f;
    #pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const int i = k * GS_THREADS + tid;
        if (i < N4) {
            float4 t = v[k];
            t.x = expf(t.x - M); t.y = expf(t.y - M); t.z = expf(t.z - M); t.w = expf(t.w - M);
            s += (t.x + t.y) + (t.z + t.w);
            v[k] = t;
        }
    }
    const float S = block_sum(s, sh);
    const float inv = 1.0f / S;

    #pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const int i = k * GS_THREADS + tid;
        if (i < N4) {
            float4 t = v[k];
            t.x *= inv; t.y *= inv; t.z *= inv; t.w *= inv;
            __stcs(yr + i, t);
        }
    }
}

torch::Tensor gelu_softmax_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2, "bad input");
    x = x.contiguous();
    const int64_t rows = x.size(0), N = x.size(1);
    TORCH_CHECK(N % 4 == 0, "N must be a multiple of 4");
    auto y = torch::empty_like(x);
    if (rows == 0 || N == 0) return y;
    const int N4 = (int)(N / 4);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const float* xp = x.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const unsigned g = (unsigned)rows;
    if (N4 <= GS_THREADS * 1)       gelu_softmax_kernel<1><<<g, GS_THREADS, 0, stream>>>(xp, yp, N4);
    else if (N4 <= GS_THREADS * 2)  gelu_softmax_kernel<2><<<g, GS_THREADS, 0, stream>>>(xp, yp, N4);
    else if (N4 <= GS_THREADS * 4)  gelu_softmax_kernel<4><<<g, GS_THREADS, 0, stream>>>(xp, yp, N4);
    else if (N4 <= GS_THREADS * 8)  gelu_softmax_kernel<8><<<g, GS_THREADS, 0, stream>>>(xp, yp, N4);
    else if (N4 <= GS_THREADS * 16) gelu_softmax_kernel<16><<<g, GS_THREADS, 0, stream>>>(xp, yp, N4);
    else { TORCH_CHECK(false, "row too long for register kernel"); }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_src = (
    "torch::Tensor split3_cuda(torch::Tensor x, int64_t mode);\n"
    "torch::Tensor gelu_softmax_cuda(torch::Tensor x);\n"
)

ext = load_inline(
    name="gemm3xtf32_gelu_softmax_ext",
    cpp_sources=cpp_src,
    cuda_sources=src,
    functions=["split3_cuda", "gelu_softmax_cuda"],
    verbose=False,
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    """
    Linear (fp32-accurate 3xTF32 tensor-core GEMM) + fused GELU/softmax CUDA kernel.
    """
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.ext = ext
        self._wkey = None
        self._wcat = None

    def _split_weight(self):
        w = self.linear.weight
        key = (w.data_ptr(), w._version, str(w.device), tuple(w.shape))
        if self._wkey != key or self._wcat is None:
            with torch.no_grad():
                self._wcat = self.ext.split3_cuda(w.detach().contiguous(), 1)
            self._wkey = key
        return self._wcat

    def forward(self, x):
        w = self.linear.weight
        b = self.linear.bias
        if (not x.is_cuda) or x.dtype != torch.float32 or w.dtype != torch.float32 \
                or x.dim() != 2 or (x.shape[1] % 4) != 0 or (w.shape[0] % 4) != 0 \
                or w.shape[0] > 512 * 16 * 4:
            y = self.linear(x)
            y = F.gelu(y)
            return F.softmax(y, dim=1)
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
            return self.ext.gelu_softmax_cuda(y)
