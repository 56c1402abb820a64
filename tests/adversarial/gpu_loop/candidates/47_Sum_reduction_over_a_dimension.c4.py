import ctypes
import math
import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
#define BT 1024
#define GRP 32

extern __shared__ double dsm[];

__device__ __forceinline__ void ldv(const float* p, float (&a)[4]) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
        : "=f"(a[0]), "=f"(a[1]), "=f"(a[2]), "=f"(a[3]) : "l"(p));
}
__device__ __forceinline__ void ldv(const float* p, float (&a)[1]) {
    a[0] = __ldg(p);
}

// x viewed as [O*S, Wf] row-major (Wf = Wv*V floats per super-row, S super-rows per batch).
// Block (bq = b*Q + ch, tile): super-rows [s, e) of batch b, vector columns
// j = tile*K*BT + k*BT + tid (k < K). Consecutive super-rows are adjacent in memory, so
// with tiles == 1 the block's footprint is one contiguous range.
// Per-thread accumulators: fp32 over GRP rows, then fp64 in shared memory
// (thread-private slots, layout [(k*V + v)*BT + tid]: conflict-free).
template <int V, int K>
__device__ __forceinline__ void colsum_body(const float* __restrict__ x, double* ws,
                                            float* __restrict__ out,
                                            long long S, long long Wf, long long Wv, long long I,
                                            int Q, int tiles, int g, int direct) {
    const int tid = threadIdx.x;
    const int bid = blockIdx.x;
    const int bq = bid / tiles;
    const int tile = bid - bq * tiles;
    const int b = bq / Q;
    const int ch = bq - b * Q;
    const long long s = (long long)b * S + ((long long)ch * S) / Q;
    const long long e = (long long)b * S + ((long long)(ch + 1) * S) / Q;
    const long long j0 = (long long)tile * (K * BT) + tid;

    bool valid[K];
    int dk[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        long long jk = j0 + (long long)k * BT;
        valid[k] = jk < Wv;
        if (!valid[k]) jk = Wv - 1;          // clamp: in-bounds load, result never used
        dk[k] = (int)((jk - j0) * V);
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
        for (int v = 0; v < V; ++v) dsm[(k * V + v) * BT + tid] = 0.0;
    }

    const float* p = x + s * Wf + j0 * V;
    const long long n = e - s;
    const long long ng = n / GRP;
    for (long long gi = 0; gi < ng; ++gi) {
        float F[K][V];
#pragma unroll
        for (int k = 0; k < K; ++k) {
#pragma unroll
            for (int v = 0; v < V; ++v) F[k][v] = 0.f;
        }
#pragma unroll
        for (int u = 0; u < GRP; ++u) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                float a[V];
                ldv(p + dk[k], a);
#pragma unroll
                for (int v = 0; v < V; ++v) F[k][v] += a[v];
            }
            p += Wf;
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
#pragma unroll
            for (int v = 0; v < V; ++v) dsm[(k * V + v) * BT + tid] += (double)F[k][v];
        }
    }
    const int rem = (int)(n - ng * GRP);
    if (rem > 0) {
        float F[K][V];
#pragma unroll
        for (int k = 0; k < K; ++k) {
#pragma unroll
            for (int v = 0; v < V; ++v) F[k][v] = 0.f;
        }
#pragma unroll 1
        for (int u = 0; u < rem; ++u) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                float a[V];
                ldv(p + dk[k], a);
#pragma unroll
                for (int v = 0; v < V; ++v) F[k][v] += a[v];
            }
            p += Wf;
        }
#pragma unroll
        for (int k = 0; k < K; ++k) {
#pragma unroll
            for (int v = 0; v < V; ++v) dsm[(k * V + v) * BT + tid] += (double)F[k][v];
        }
    }

    if (direct) {
        // Q == 1 and tiles == 1: this block holds every element f = q*I + c of batch b.
        // Element f lives in vector column j = f / V (k = j / BT, t = j % BT), lane v = f % V.
        __syncthreads();
        for (long long c = tid; c < I; c += BT) {
            double acc = 0.0;
            for (int q = 0; q < g; ++q) {
                const int f = (int)((long long)q * I + c);
                const int j = f / V;
                const int v = f - j * V;
                const int kk = j / BT;
                const int t = j - kk * BT;
                acc += dsm[(kk * V + v) * BT + t];
            }
            out[(long long)b * I + c] = (float)acc;
        }
    } else {
        double* w = ws + (long long)bq * Wf + j0 * V;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (valid[k]) {
#pragma unroll
                for (int v = 0; v < V; ++v)
                    w[(long long)k * BT * V + v] = dsm[(k * V + v) * BT + tid];
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(1024, 1) colsum_v4_k1(const float* __restrict__ x, double* ws, float* __restrict__ out, long long S, long long Wf, long long Wv, long long I, int Q, int tiles, int g, int direct) {
    colsum_body<4, 1>(x, ws, out, S, Wf, Wv, I, Q, tiles, g, direct);
}

extern "C" __global__ void __launch_bounds__(1024, 1) colsum_v4_k2(const float* __restrict__ x, double* ws, float* __restrict__ out, long long S, long long Wf, long long Wv, long long I, int Q, int tiles, int g, int direct) {
    colsum_body<4, 2>(x, ws, out, S, Wf, Wv, I, Q, tiles, g, direct);
}

extern "C" __global__ void __launch_bounds__(1024, 1) colsum_v4_k4(const float* __restrict__ x, double* ws, float* __restrict__ out, long long S, long long Wf, long long Wv, long long I, int Q, int tiles, int g, int direct) {
    colsum_body<4, 4>(x, ws, out, S, Wf, Wv, I, Q, tiles, g, direct);
}

extern "C" __global__ void __launch_bounds__(1024, 1) colsum_v1_k1(const float* __restrict__ x, double* ws, float* __restrict__ out, long long S, long long Wf, long long Wv, long long I, int Q, int tiles, int g, int direct) {
    colsum_body<1, 1>(x, ws, out, S, Wf, Wv, I, Q, tiles, g, direct);
}

extern "C" __global__ void __launch_bounds__(1024, 1) colsum_v1_k2(const float* __restrict__ x, double* ws, float* __restrict__ out, long long S, long long Wf, long long Wv, long long I, int Q, int tiles, int g, int direct) {
    colsum_body<1, 2>(x, ws, out, S, Wf, Wv, I, Q, tiles, g, direct);
}

extern "C" __global__ void __launch_bounds__(1024, 1) colsum_v1_k4(const float* __restrict__ x, double* ws, float* __restrict__ out, long long S, long long Wf, long long Wv, long long I, int Q, int tiles, int g, int direct) {
    colsum_body<1, 4>(x, ws, out, S, Wf, Wv, I, Q, tiles, g, direct);
}

// out[b, c] = sum over chunks ch < Q and row slices q < g of ws[(b*Q + ch)][q*I + c].
extern "C" __global__ void __launch_bounds__(256) colsum_final(const double* __restrict__ ws, float* __restrict__ out, long long Wf, long long I, long long O, int Q, int g) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= O * I) return;
    const long long b = idx / I;
    const long long c = idx - b * I;
    const double* w = ws + b * (long long)Q * Wf + c;
    double acc = 0.0;
    for (int ch = 0; ch < Q; ++ch) {
        for (int q = 0; q < g; ++q) acc += w[(long long)ch * Wf + (long long)q * I];
    }
    out[idx] = (float)acc;
}
"""
_mod = cuda.compile(SRC)

_BT = 1024
_LL = ctypes.c_longlong
_I32 = ctypes.c_int


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        nd = x.dim()
        d = self.dim % nd
        shape = list(x.shape)
        O = 1
        for v in shape[:d]:
            O *= int(v)
        R = int(shape[d])
        I = 1
        for v in shape[d + 1:]:
            I *= int(v)
        oshape = list(shape)
        oshape[d] = 1
        out = torch.empty(oshape, dtype=x.dtype, device=x.device)
        if out.numel() == 0:
            return out
        if R == 0:
            return out.fill_(0.0)

        g = 4 // math.gcd(I, 4)
        if R % g == 0 and x.data_ptr() % 16 == 0:
            V = 4
            S = R // g            # super-rows per batch
            Wf = g * I            # floats per super-row (multiple of 4)
            Wv = Wf // 4          # float4 per super-row
        else:
            V = 1
            g = 1
            S = R
            Wf = I
            Wv = I
        if Wv <= _BT:
            K = 1
        elif Wv <= 2 * _BT:
            K = 2
        else:
            K = 4
        tiles = (Wv + K * _BT - 1) // (K * _BT)
        base = O * tiles
        nsm = torch.cuda.get_device_properties(x.device).multi_processor_count
        Q = nsm // base if base < nsm else 1
        Q = max(1, min(Q, S))
        direct = 1 if (Q == 1 and tiles == 1) else 0

        if direct:
            ws = torch.empty(1, dtype=torch.float64, device=x.device)
        else:
            ws = torch.empty(O * Q * Wf, dtype=torch.float64, device=x.device)
        kern = getattr(_mod, "colsum_v%d_k%d" % (V, K))
        smem = K * _BT * V * 8
        kern(grid=(base * Q,), block=(_BT,), shared_mem=smem,
             args=(x, ws, out, _LL(S), _LL(Wf), _LL(Wv), _LL(I),
                   _I32(Q), _I32(tiles), _I32(g), _I32(direct)))
        if not direct:
            n = O * I
            _mod.colsum_final(grid=((n + 255) // 256,), block=(256,),
                              args=(ws, out, _LL(Wf), _LL(I), _LL(O), _I32(Q), _I32(g)))
        return out
