import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
#define TPB 256
#define UNR 8
#define RG 16

__device__ __forceinline__ void acc1(float v, float K, float& s, float& q) {
    float d = v - K; s += d; q = fmaf(d, d, q);
}
__device__ __forceinline__ void accv(const float4 v, float K, float& s, float& q) {
    acc1(v.x, K, s, q); acc1(v.y, K, s, q); acc1(v.z, K, s, q); acc1(v.w, K, s, q);
}
__device__ __forceinline__ void accv(const float v, float K, float& s, float& q) { acc1(v, K, s, q); }
__device__ __forceinline__ void fillv(float4& v, float K) { v = make_float4(K, K, K, K); }
__device__ __forceinline__ void fillv(float& v, float K) { v = K; }
__device__ __forceinline__ float4 normv(const float4 v, float m, float rs, const float4 w, const float4 b) {
    float4 o;
    o.x = fmaf((v.x - m) * rs, w.x, b.x);
    o.y = fmaf((v.y - m) * rs, w.y, b.y);
    o.z = fmaf((v.z - m) * rs, w.z, b.z);
    o.w = fmaf((v.w - m) * rs, w.w, b.w);
    return o;
}
__device__ __forceinline__ float normv(const float v, float m, float rs, const float w, const float b) {
    return fmaf((v - m) * rs, w, b);
}

// Pass 1: block b handles row r = b % M, chunks cp = sub, sub+bpr, ... (visited in reverse order).
// Sums of d = x - K (K = first element of the row) and d*d, fp32 within a chunk, fp64 across chunks.
template <typename T>
__device__ __forceinline__ void stats_impl(const T* __restrict__ x, const float* __restrict__ xs,
                                           double* __restrict__ part, int M, long long N, long long NV, int bpr) {
    const int b = blockIdx.x;
    const int r = b % M;
    const int sub = b / M;
    const T* row = x + (long long)r * NV;
    const float K = __ldg(xs + (long long)r * N);
    const long long CH = (long long)TPB * UNR;
    const long long C = (NV + CH - 1) / CH;
    double S = 0.0, Q = 0.0;
    for (long long cp = sub; cp < C; cp += bpr) {
        const long long base = (C - 1 - cp) * CH + threadIdx.x;
        T v[UNR];
#pragma unroll
        for (int u = 0; u < UNR; ++u) {
            const long long i = base + (long long)u * TPB;
            if (i < NV) v[u] = row[i]; else fillv(v[u], K);
        }
        float s = 0.f, q = 0.f;
#pragma unroll
        for (int u = 0; u < UNR; ++u) accv(v[u], K, s, q);
        S += (double)s;
        Q += (double)q;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        S += __shfl_xor_sync(0xffffffffu, S, o);
        Q += __shfl_xor_sync(0xffffffffu, Q, o);
    }
    __shared__ double sh[2][TPB / 32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) { sh[0][warp] = S; sh[1][warp] = Q; }
    __syncthreads();
    if (warp == 0) {
        S = (lane < TPB / 32) ? sh[0][lane] : 0.0;
        Q = (lane < TPB / 32) ? sh[1][lane] : 0.0;
#pragma unroll
        for (int o = 4; o > 0; o >>= 1) {
            S += __shfl_xor_sync(0xffffffffu, S, o);
            Q += __shfl_xor_sync(0xffffffffu, Q, o);
        }
        if (lane == 0) {
            const long long p = 2LL * ((long long)r * bpr + sub);
            part[p] = S;
            part[p + 1] = Q;
        }
    }
}

// Pass 2: blockIdx.y = group of RG rows; prologue folds the partials into mean/rstd;
// then grid-stride over positions j: weight/bias loaded once, applied to every row of the group.
template <typename T>
__device__ __forceinline__ void norm_impl(const T* __restrict__ x, const float* __restrict__ xs,
                                          const T* __restrict__ w, const T* __restrict__ bb,
                                          T* __restrict__ y, const double* __restrict__ part,
                                          int M, long long N, long long NV, int bpr, double eps) {
    __shared__ float s_m[RG], s_r[RG];
    const int g0 = blockIdx.y * RG;
    const int nr = min(RG, M - g0);
    {
        const int rr = threadIdx.x >> 4, l = threadIdx.x & 15;   // TPB == RG * 16
        const int r = g0 + rr;
        double S = 0.0, Q = 0.0;
        if (rr < nr) {
            const double* p = part + 2LL * (long long)r * bpr;
            for (int s = l; s < bpr; s += 16) { S += p[2 * s]; Q += p[2 * s + 1]; }
        }
#pragma unroll
        for (int o = 8; o > 0; o >>= 1) {
            S += __shfl_xor_sync(0xffffffffu, S, o);
            Q += __shfl_xor_sync(0xffffffffu, Q, o);
        }
        if (l == 0 && rr < nr) {
            const double inv = 1.0 / (double)N;
            const double md = S * inv;
            double var = Q * inv - md * md;
            if (var < 0.0) var = 0.0;
            s_m[rr] = (float)((double)__ldg(xs + (long long)r * N) + md);
            s_r[rr] = (float)(1.0 / sqrt(var + eps));
        }
    }
    __syncthreads();

    const long long stride = (long long)gridDim.x * TPB;
    const T* xg = x + (long long)g0 * NV;
    T* yg = y + (long long)g0 * NV;
    if (nr == RG) {
        for (long long j = (long long)blockIdx.x * TPB + threadIdx.x; j < NV; j += stride) {
            const T wv = w[j];
            const T bv = bb[j];
#pragma unroll
            for (int h = 0; h < RG; h += 4) {
                T v[4];
#pragma unroll
                for (int k = 0; k < 4; ++k) v[k] = __ldcs(xg + (long long)(h + k) * NV + j);
#pragma unroll
                for (int k = 0; k < 4; ++k)
                    __stcs(yg + (long long)(h + k) * NV + j, normv(v[k], s_m[h + k], s_r[h + k], wv, bv));
            }
        }
    } else {
        for (long long j = (long long)blockIdx.x * TPB + threadIdx.x; j < NV; j += stride) {
            const T wv = w[j];
            const T bv = bb[j];
            for (int rr = 0; rr < nr; ++rr) {
                const T v = __ldcs(xg + (long long)rr * NV + j);
                __stcs(yg + (long long)rr * NV + j, normv(v, s_m[rr], s_r[rr], wv, bv));
            }
        }
    }
}

extern "C" {
__global__ void __launch_bounds__(TPB, 4)
ln_stats_v4(const float4* __restrict__ x, const float* __restrict__ xs, double* __restrict__ part,
            int M, long long N, long long NV, int bpr) {
    stats_impl<float4>(x, xs, part, M, N, NV, bpr);
}
__global__ void __launch_bounds__(TPB, 4)
ln_stats_s(const float* __restrict__ x, const float* __restrict__ xs, double* __restrict__ part,
           int M, long long N, long long NV, int bpr) {
    stats_impl<float>(x, xs, part, M, N, NV, bpr);
}
__global__ void __launch_bounds__(TPB, 6)
ln_norm_v4(const float4* __restrict__ x, const float* __restrict__ xs, const float4* __restrict__ w,
           const float4* __restrict__ b, float4* __restrict__ y, const double* __restrict__ part,
           int M, long long N, long long NV, int bpr, double eps) {
    norm_impl<float4>(x, xs, w, b, y, part, M, N, NV, bpr, eps);
}
__global__ void __launch_bounds__(TPB, 6)
ln_norm_s(const float* __restrict__ x, const float* __restrict__ xs, const float* __restrict__ w,
          const float* __restrict__ b, float* __restrict__ y, const double* __restrict__ part,
          int M, long long N, long long NV, int bpr, double eps) {
    norm_impl<float>(x, xs, w, b, y, part, M, N, NV, bpr, eps);
}
}
"""
_mod = cuda.compile(SRC)

_TPB = 256
_UNR = 8
_SLOTS = 132 * 4  # resident blocks (4 x 256 threads per SM), stats pass
_NSLOTS = 132 * 6  # resident blocks of the normalize pass (6 x 256 threads per SM)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)  # parameter holder (weight, bias, eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        N = 1
        for d in self.ln.normalized_shape:
            N *= int(d)
        out = torch.empty_like(x)
        if x.numel() == 0 or N == 0:
            return out
        M = x.numel() // N
        w = self.ln.weight.detach().contiguous()
        b = self.ln.bias.detach().contiguous()
        eps = float(self.ln.eps)

        vec = (N % 4 == 0) and all(t.data_ptr() % 16 == 0 for t in (x, w, b, out))
        NV = N // 4 if vec else N

        # pass 1 geometry: bpr blocks per row, evenly splitting the C chunks
        CH = _TPB * _UNR
        C = (NV + CH - 1) // CH
        bpr0 = max(1, min(C, _SLOTS // M))
        k = (C + bpr0 - 1) // bpr0
        bpr = (C + k - 1) // k
        part = torch.empty(2 * M * bpr, dtype=torch.float64, device=x.device)

        # pass 2 geometry: one wave, even iterations per block
        ngroups = (M + 15) // 16
        gx0 = max(1, min((NV + _TPB - 1) // _TPB, max(1, _NSLOTS // ngroups)))
        kk = (NV + gx0 * _TPB - 1) // (gx0 * _TPB)
        gx = max(1, (NV + kk * _TPB - 1) // (kk * _TPB))

        if vec:
            _mod.ln_stats_v4(grid=(M * bpr,), block=(_TPB,), args=(x, x, part, M, N, NV, bpr))
            _mod.ln_norm_v4(grid=(gx, ngroups), block=(_TPB,),
                            args=(x, x, w, b, out, part, M, N, NV, bpr, eps))
        else:
            _mod.ln_stats_s(grid=(M * bpr,), block=(_TPB,), args=(x, x, part, M, N, NV, bpr))
            _mod.ln_norm_s(grid=(gx, ngroups), block=(_TPB,),
                           args=(x, x, w, b, out, part, M, N, NV, bpr, eps))
        return out
