import math
import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
#define BT 256
#define GRP 32
#define UNR 8

__device__ __forceinline__ void ldv(const float* p, float (&a)[4]) {
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(a[0]), "=f"(a[1]), "=f"(a[2]), "=f"(a[3]) : "l"(p));
}
__device__ __forceinline__ void ldv(const float* p, float (&a)[1]) {
    a[0] = __ldg(p);
}

// x viewed as a [T, Wv*V] row-major matrix (rows grouped in batches of S rows).
// Block (i, tile): rows [s, e) with s = i*T/P, vector column c = tile*BT + tid.
// Row range spans at most two batches (P >= O): slot 0 = batch s/S, slot 1 = next.
template <int V>
__device__ __forceinline__ void colsum_body(const float* __restrict__ x, double* __restrict__ ws,
                                            long long T, long long S, long long Wv, int P, int tiles) {
    const int bid = blockIdx.x;
    const int i = bid / tiles;
    const int tile = bid - i * tiles;
    const long long c = (long long)tile * BT + threadIdx.x;
    if (c >= Wv) return;
    const long long s = ((long long)i * T) / P;
    const long long e = ((long long)(i + 1) * T) / P;
    if (s >= e) return;
    const long long Wf = Wv * V;
    const float* base = x + c * V;

    double D[V];
#pragma unroll
    for (int k = 0; k < V; ++k) D[k] = 0.0;

    long long nb = (s / S + 1) * S;   // next batch boundary
    int slot = 0;
    long long row = s;
    while (true) {
        const long long se = e < nb ? e : nb;
        const float* p = base + row * Wf;
        const int n = (int)(se - row);
        const int nfull = n / GRP;
        for (int gi = 0; gi < nfull; ++gi) {
            float F[V];
#pragma unroll
            for (int k = 0; k < V; ++k) F[k] = 0.f;
#pragma unroll
            for (int q = 0; q < GRP; q += UNR) {
                float a[UNR][V];
#pragma unroll
                for (int u = 0; u < UNR; ++u) ldv(p + (long long)u * Wf, a[u]);
#pragma unroll
                for (int u = 0; u < UNR; ++u) {
#pragma unroll
                    for (int k = 0; k < V; ++k) F[k] += a[u][k];
                }
                p += UNR * Wf;
            }
#pragma unroll
            for (int k = 0; k < V; ++k) D[k] += (double)F[k];
        }
        const int cnt = n - nfull * GRP;
        if (cnt > 0) {
            float F[V];
#pragma unroll
            for (int k = 0; k < V; ++k) F[k] = 0.f;
            for (int q = 0; q < cnt; q += UNR) {
                float a[UNR][V];
#pragma unroll
                for (int u = 0; u < UNR; ++u) {
                    if (q + u < cnt) {
                        ldv(p + (long long)u * Wf, a[u]);
                    } else {
#pragma unroll
                        for (int k = 0; k < V; ++k) a[u][k] = 0.f;
                    }
                }
#pragma unroll
                for (int u = 0; u < UNR; ++u) {
#pragma unroll
                    for (int k = 0; k < V; ++k) F[k] += a[u][k];
                }
                p += UNR * Wf;
            }
#pragma unroll
            for (int k = 0; k < V; ++k) D[k] += (double)F[k];
        }
        double* w = ws + ((long long)i * 2 + slot) * Wf + c * V;
#pragma unroll
        for (int k = 0; k < V; ++k) w[k] = D[k];
        if (se >= e) break;
#pragma unroll
        for (int k = 0; k < V; ++k) D[k] = 0.0;
        ++slot;
        row = se;
        nb += S;
    }
}

extern "C" __global__ void __launch_bounds__(BT, 4)
colsum_v4(const float* __restrict__ x, double* __restrict__ ws,
          long long T, long long S, long long Wv, int P, int tiles) {
    colsum_body<4>(x, ws, T, S, Wv, P, tiles);
}

extern "C" __global__ void __launch_bounds__(BT, 4)
colsum_v1(const float* __restrict__ x, double* __restrict__ ws,
          long long T, long long S, long long Wv, int P, int tiles) {
    colsum_body<1>(x, ws, T, S, Wv, P, tiles);
}

// out[b, c] = sum over blocks i touching batch b (in block order) and over the g
// original rows q packed in a super-row: ws[i][slot][q*I + c].
extern "C" __global__ void __launch_bounds__(256)
colsum_final(const double* __restrict__ ws, float* __restrict__ out,
             long long T, long long S, long long Wf, long long I, long long O, int P, int g) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= O * I) return;
    const long long b = idx / I;
    const long long c = idx - b * I;
    const long long x0 = b * S, x1 = b * S + S - 1;
    // largest i with floor(i*T/P) <= x  is  ceil((x+1)*P/T) - 1
    long long ilo = ((x0 + 1) * (long long)P + T - 1) / T - 1;
    long long ihi = ((x1 + 1) * (long long)P + T - 1) / T - 1;
    if (ilo > P - 1) ilo = P - 1;
    if (ihi > P - 1) ihi = P - 1;
    if (ilo < 0) ilo = 0;
    double acc = 0.0;
    for (long long i = ilo; i <= ihi; ++i) {
        const long long si = (i * T) / P;
        const long long ei = ((i + 1) * T) / P;
        if (ei <= si) continue;
        const long long slot = b - si / S;
        const double* w = ws + (i * 2 + slot) * Wf + c;
        for (int q = 0; q < g; ++q) acc += w[(long long)q * I];
    }
    out[idx] = (float)acc;
}
"""
_mod = cuda.compile(SRC)

_BT = 256
_BLOCKS_PER_SM = 4


def _num_sms(dev):
    return torch.cuda.get_device_properties(dev).multi_processor_count


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
            vec = True
            S = R // g            # super-rows per batch
            Wf = g * I            # floats per super-row (multiple of 4)
            Wv = Wf // 4          # float4 per super-row
        else:
            vec = False
            g = 1
            S = R
            Wf = I
            Wv = I
        T = O * S
        tiles = (Wv + _BT - 1) // _BT
        wave = _num_sms(x.device) * _BLOCKS_PER_SM
        P0 = max(1, (wave + tiles - 1) // tiles)
        P = P0 * ((O + P0 - 1) // P0)   # >= O: each row range spans at most two batches
        P = min(P, T)                   # every block gets >= 1 row (T >= O keeps P >= O)

        ws = torch.empty(P * 2 * Wf, dtype=torch.float64, device=x.device)
        kern = _mod.colsum_v4 if vec else _mod.colsum_v1
        kern(grid=(P * tiles,), block=(_BT,), args=(x, ws, T, S, Wv, P, tiles))
        n = O * I
        _mod.colsum_final(grid=((n + 255) // 256,), block=(256,),
                          args=(ws, out, T, S, Wf, I, O, P, g))
        return out
