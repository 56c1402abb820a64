import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# LayerNorm over a huge normalized shape (64*256*256 = 4M elements per row, 16 rows).
# Kernel 1: chunk-parallel (pivot-shifted) sum / sum-of-squares partials over all SMs; the last
#           block of each row (atomic ticket) reduces the partials in double -> mean, rstd.
# Kernel 2: each thread loads one float4 of weight/bias ONCE and applies it to all rows
#           (weight/bias read once from HBM), processing positions in reverse order so the tail
#           of x that kernel 1 left in L2 is consumed first.

ln_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <math.h>

#define LN_THREADS 256
#define LN_CHUNK4 4096      // float4 per stats block (16384 floats)
#define LN_UNROLL 4

__global__ void __launch_bounds__(LN_THREADS)
ln_stats_kernel(const float* __restrict__ x, float* __restrict__ part_s, float* __restrict__ part_ss,
                unsigned int* __restrict__ counter, float* __restrict__ stats,
                int rows, int P, long long N4, float eps) {
    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int row = blockIdx.x % rows;
    const int chunk = blockIdx.x / rows;
    const long long N = N4 * 4;
    const float* xr = x + (long long)row * N;
    const float pivot = __ldg(xr);
    const float4* x4 = reinterpret_cast<const float4*>(xr);

    const long long beg = (long long)chunk * LN_CHUNK4;
    long long end = beg + LN_CHUNK4;
    if (end > N4) end = N4;

    float s = 0.f, ss = 0.f;
    for (long long base = beg; base < end; base += (long long)LN_THREADS * LN_UNROLL) {
        float4 v[LN_UNROLL];
        #pragma unroll
        for (int u = 0; u < LN_UNROLL; ++u) {
            long long i = base + (long long)u * LN_THREADS + tid;
            v[u] = make_float4(pivot, pivot, pivot, pivot);
            if (i < end) v[u] = x4[i];
        }
        #pragma unroll
        for (int u = 0; u < LN_UNROLL; ++u) {
            float a = v[u].x - pivot, b = v[u].y - pivot, c = v[u].z - pivot, d = v[u].w - pivot;
            s += (a + b) + (c + d);
            ss = fmaf(a, a, ss); ss = fmaf(b, b, ss); ss = fmaf(c, c, ss); ss = fmaf(d, d, ss);
        }
    }

    __shared__ float sh_s[LN_THREADS / 32], sh_ss[LN_THREADS / 32];
    __shared__ int am_last;
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        s  += __shfl_xor_sync(0xffffffffu, s, o);
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    }
    if (lane == 0) { sh_s[warp] = s; sh_ss[warp] = ss; }
    __syncthreads();
    if (tid == 0) {
        float bs = 0.f, bss = 0.f;
        #pragma unroll
        for (int w = 0; w < LN_THREADS / 32; ++w) { bs += sh_s[w]; bss += sh_ss[w]; }
        part_s[(long long)row * P + chunk] = bs;
        part_ss[(long long)row * P + chunk] = bss;
        __threadfence();
        unsigned int prev = atomicAdd(&counter[row], 1u);
        am_last = (prev == (unsigned int)(P - 1)) ? 1 : 0;
    }
    __syncthreads();
    if (!am_last) return;

    // last block of this row: reduce P partials in double
    __threadfence();
    double ds = 0.0, dss = 0.0;
    for (int i = tid; i < P; i += LN_THREADS) {
        ds  += (double)__ldcg(&part_s[(long long)row * P + i]);
        dss += (double)__ldcg(&part_ss[(long long)row * P + i]);
    }
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        ds  += __shfl_xor_sync(0xffffffffu, ds, o);
        dss += __shfl_xor_sync(0xffffffffu, dss, o);
    }
    __shared__ double dsh_s[LN_THREADS / 32], dsh_ss[LN_THREADS / 32];
    if (lane == 0) { dsh_s[warp] = ds; dsh_ss[warp] = dss; }
    __syncthreads();
    if (tid == 0) {
        double ts = 0.0, tss = 0.0;
        for (int w = 0; w < LN_THREADS / 32; ++w) { ts += dsh_s[w]; tss += dsh_ss[w]; }
        const double n = (double)N;
        const double mshift = ts / n;
        double var = tss / n - mshift * mshift;
        if (var < 0.0) var = 0.0;
        const double mean = (double)pivot + mshift;
        const double rstd = 1.0 / sqrt(var + (double)eps);
        stats[2 * row + 0] = (float)mean;
        stats[2 * row + 1] = (float)rstd;
        counter[row] = 0u;   // reset for the next call
    }
}

__global__ void __launch_bounds__(LN_THREADS)
ln_apply_kernel(const float4* __restrict__ x, const float4* __restrict__ w, const float4* __restrict__ b,
                float4* __restrict__ y, const float* __restrict__ stats, int rows, long long N4) {
    const long long blk = (long long)(gridDim.x - 1 - blockIdx.x);
    const long long i = blk * LN_THREADS + threadIdx.x;
    if (i >= N4) return;
    const float4 wv = __ldg(w + i);
    const float4 bv = __ldg(b + i);
    int r = 0;
    for (; r + 4 <= rows; r += 4) {
        float4 xv[4];
        #pragma unroll
        for (int u = 0; u < 4; ++u) xv[u] = __ldcs(x + (long long)(r + u) * N4 + i);
        #pragma unroll
        for (int u = 0; u < 4; ++u) {
            const float mean = __ldg(stats + 2 * (r + u));
            const float rstd = __ldg(stats + 2 * (r + u) + 1);
            float4 o;
            o.x = fmaf((xv[u].x - mean) * rstd, wv.x, bv.x);
            o.y = fmaf((xv[u].y - mean) * rstd, wv.y, bv.y);
            o.z = fmaf((xv[u].z - mean) * rstd, wv.z, bv.z);
            o.w = fmaf((xv[u].w - mean) * rstd, wv.w, bv.w);
            __stcs(y + (long long)(r + u) * N4 + i, o);
        }
    }
    for (; r < rows; ++r) {
        const float4 xv = __ldcs(x + (long long)r * N4 + i);
        const float mean = __ldg(stats + 2 * r);
        const float rstd = __ldg(stats + 2 * r + 1);
        float4 o;
        o.x = fmaf((xv.x - mean) * rstd, wv.x, bv.x);
        o.y = fmaf((xv.y - mean) * rstd, wv.y, bv.y);
        o.z = fmaf((xv.z - mean) * rstd, wv.z, bv.z);
        o.w = fmaf((xv.w - mean) * rstd, wv.w, bv.w);
        __stcs(y + (long long)r * N4 + i, o);
    }
}

torch::Tensor layernorm_cuda(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                             torch::Tensor counter, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be CUDA float32");
    TORCH_CHECK(x.is_contiguous() && weight.is_contiguous() && bias.is_contiguous(), "contiguous required");
    const long long N = weight.numel();
    const long long total = x.numel();
    TORCH_CHECK(N > 0 && total % N == 0 && N % 4 == 0, "bad shapes");
    const int rows = (int)(total / N);
    auto y = torch::empty_like(x);
    if (rows == 0) return y;
    TORCH_CHECK(counter.numel() >= rows, "counter too small");
    const long long N4 = N / 4;
    const int P = (int)((N4 + LN_CHUNK4 - 1) / LN_CHUNK4);

    auto fopt = x.options();
    auto part_s = torch::empty({(int64_t)rows * (int64_t)P}, fopt);
    auto part_ss = torch::empty({(int64_t)rows * (int64_t)P}, fopt);
    auto stats = torch::empty({(int64_t)rows * 2}, fopt);

    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const long long g1 = (long long)rows * P;
    ln_stats_kernel<<<(unsigned)g1, LN_THREADS, 0, stream>>>(
        x.data_ptr<float>(), part_s.data_ptr<float>(), part_ss.data_ptr<float>(),
        reinterpret_cast<unsigned int*>(counter.data_ptr<int>()), stats.data_ptr<float>(),
        rows, P, N4, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();

    const long long g2 = (N4 + LN_THREADS - 1) / LN_THREADS;
    ln_apply_kernel<<<(unsigned)g2, LN_THREADS, 0, stream>>>(
        reinterpret_cast<const float4*>(x.data_ptr<float>()),
        reinterpret_cast<const float4*>(weight.data_ptr<float>()),
        reinterpret_cast<const float4*>(bias.data_ptr<float>()),
        reinterpret_cast<float4*>(y.data_ptr<float>()),
        stats.data_ptr<float>(), rows, N4);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

ln_cpp_source = ("torch::Tensor layernorm_cuda(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, "
                 "torch::Tensor counter, double eps);")

ln_ext = load_inline(
    name="layernorm_bigrow_ext",
    cpp_sources=ln_cpp_source,
    cuda_sources=ln_source,
    functions=["layernorm_cuda"],
    verbose=False,
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    """
    LayerNorm with custom two-kernel CUDA implementation (stats + fused affine apply).
    """
    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
        self.ext = ln_ext
        self._counter = None

    def _get_counter(self, rows, device):
        c = self._counter
        if c is None or c.device != device or c.numel() < rows:
            c = torch.zeros(max(rows, 1), dtype=torch.int32, device=device)
            self._counter = c
        return c

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.ln.weight
        b = self.ln.bias
        ns = tuple(self.ln.normalized_shape)
        nd = len(ns)
        ok = (x.is_cuda and x.dtype == torch.float32 and w is not None and b is not None
              and w.dtype == torch.float32 and b.dtype == torch.float32
              and x.dim() >= nd and tuple(x.shape[x.dim() - nd:]) == ns
              and w.numel() % 4 == 0 and x.numel() > 0)
        if not ok:
            return self.ln(x)
        x = x.contiguous()
        wc = w.contiguous()
        bc = b.contiguous()
        if (x.data_ptr() % 16 != 0) or (wc.data_ptr() % 16 != 0) or (bc.data_ptr() % 16 != 0):
            return self.ln(x)
        rows = x.numel() // wc.numel()
        counter = self._get_counter(rows, x.device)
        return self.ext.layernorm_cuda(x, wc, bc, counter, float(self.ln.eps))
