import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
#define BT 1024
#define CPT 4
#define TILE (BT * CPT)
#define GRP 32

// Block i sums rows [s, e) of the flattened [O*R, I] matrix (s = i*T/P), columns
// c0 + k*BT of its tile. The range spans at most two batches (P >= O): the partial for
// batch s/R goes to slot 0, the one for s/R + 1 to slot 1 of ws[P][2][I] (fp64).
extern "C" __global__ void __launch_bounds__(BT, 1)
colsum_main(const float* __restrict__ x, double* __restrict__ ws,
            long long T, long long R, long long I, int P) {
    const int i = blockIdx.x;
    const long long s = ((long long)i * T) / P;
    const long long e = ((long long)(i + 1) * T) / P;
    if (s >= e) return;
    const long long c0 = (long long)blockIdx.y * TILE + threadIdx.x;
    bool m[CPT];
#pragma unroll
    for (int k = 0; k < CPT; ++k) m[k] = (c0 + (long long)k * BT) < I;

    double D[CPT];
#pragma unroll
    for (int k = 0; k < CPT; ++k) D[k] = 0.0;

    long long nb = (s / R + 1) * R;   // next batch boundary
    int slot = 0;
    long long row = s;
    while (true) {
        const long long se = e < nb ? e : nb;
        for (long long r = row; r < se; r += GRP) {
            const long long rem = se - r;
            const float* p = x + r * I + c0;
            float F[CPT];
#pragma unroll
            for (int k = 0; k < CPT; ++k) F[k] = 0.f;
            if (rem >= GRP) {
#pragma unroll
                for (int q = 0; q < GRP; q += 8) {
                    float a[8][CPT];
#pragma unroll
                    for (int u = 0; u < 8; ++u) {
#pragma unroll
                        for (int k = 0; k < CPT; ++k)
                            a[u][k] = m[k] ? p[(long long)u * I + k * BT] : 0.f;
                    }
#pragma unroll
                    for (int u = 0; u < 8; ++u) {
#pragma unroll
                        for (int k = 0; k < CPT; ++k) F[k] += a[u][k];
                    }
                    p += 8 * I;
                }
            } else {
                const int cnt = (int)rem;
                for (int q = 0; q < cnt; ++q) {
#pragma unroll
                    for (int k = 0; k < CPT; ++k) F[k] += m[k] ? p[k * BT] : 0.f;
                    p += I;
                }
            }
#pragma unroll
            for (int k = 0; k < CPT; ++k) D[k] += (double)F[k];
        }
        double* w = ws + ((long long)i * 2 + slot) * I + c0;
#pragma unroll
        for (int k = 0; k < CPT; ++k)
            if (m[k]) w[k * BT] = D[k];
        if (se >= e) break;
#pragma unroll
        for (int k = 0; k < CPT; ++k) D[k] = 0.0;
        ++slot;
        row = se;
        nb += R;
    }
}

// out[b, c] = sum over the blocks whose row range meets batch b, in block order.
extern "C" __global__ void __launch_bounds__(256)
colsum_final(const double* __restrict__ ws, float* __restrict__ out,
             long long T, long long R, long long I, long long O, int P) {
    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= O * I) return;
    const long long b = idx / I;
    const long long c = idx - b * I;
    const long long x0 = b * R, x1 = b * R + R - 1;
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
        const long long slot = b - si / R;
        acc += ws[(i * 2 + slot) * I + c];
    }
    out[idx] = (float)acc;
}
"""
_mod = cuda.compile(SRC)

_BT = 1024
_TILE = _BT * 4
_SLOTS = 132  # one 1024-thread block per SM


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
        T = O * R
        tiles = (I + _TILE - 1) // _TILE
        P = max(O, (_SLOTS + tiles - 1) // tiles)
        P = min(P, T)  # every block gets >= 1 row; P >= O keeps each range within two batches
        ws = torch.empty(P * 2 * I, dtype=torch.float64, device=x.device)
        _mod.colsum_main(grid=(P, tiles), block=(_BT,), args=(x, ws, T, R, I, P))
        n = O * I
        _mod.colsum_final(grid=((n + 255) // 256,), block=(256,), args=(ws, out, T, R, I, O, P))
        return out
