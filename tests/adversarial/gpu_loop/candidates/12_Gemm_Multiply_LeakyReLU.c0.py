import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
#define BM 128
#define BN 128
#define BK 32
#define LDSM 36          // padded smem row stride in floats (conflict-free fragment loads)
#define STAGES 3
#define NT 256

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ void cp_async16(unsigned saddr, const void* g) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(saddr), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait1() {
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
}
__device__ __forceinline__ unsigned f2tf32(float f) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
    return r;
}
// v = hi + lo, hi and lo both TF32 (lo = rounded residual)
__device__ __forceinline__ void split(float v, unsigned& hi, unsigned& lo) {
    hi = f2tf32(v);
    lo = f2tf32(v - __uint_as_float(hi));
}
__device__ __forceinline__ void mma_tf32(float* c, const unsigned* a, const unsigned* b) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ float lrelu(float v, float slope) {
    return v > 0.f ? v : v * slope;
}

// both operand tiles: 128 rows x 32 k floats = 1024 float4, 4 per thread
__device__ __forceinline__ void load_tile(unsigned sA, unsigned sB, const float* Xb, const float* Wb,
                                          int K, int kt, int stage, int t) {
    const int k0 = kt * BK;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int idx = t + i * NT;
        const int row = idx >> 3, c4 = idx & 7;
        const unsigned soff = (unsigned)(((stage * BM + row) * LDSM + c4 * 4) * 4);
        cp_async16(sA + soff, Xb + (long long)row * K + k0 + c4 * 4);
        cp_async16(sB + soff, Wb + (long long)row * K + k0 + c4 * 4);
    }
}

// Y[M,N] = lrelu((X[M,K] @ W[N,K]^T + bias) * mult);  M%128 == N%128 == K%32 == 0
extern "C" __global__ void __launch_bounds__(NT, 2)
gemm3xtf32_lrelu(const float* __restrict__ X, const float* __restrict__ W,
                 const float* __restrict__ bias, float* __restrict__ Y,
                 int M, int N, int K, float mult, float slope)
{
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                              // STAGES x BM x LDSM
    float* Bs = smem + STAGES * BM * LDSM;         // STAGES x BN x LDSM

    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int g = lane >> 2, tig = lane & 3;
    const int wm = warp >> 2;                      // 0..1 : 64 rows each
    const int wn = warp & 3;                       // 0..3 : 32 cols each
    const int bm = blockIdx.x * BM, bn = blockIdx.y * BN;

    const float* Xb = X + (long long)bm * K;
    const float* Wb = W + (long long)bn * K;
    const unsigned sA = smem_u32(As), sB = smem_u32(Bs);

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

    const int KT = K / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(sA, sB, Xb, Wb, K, s, s, t);
        cp_async_commit();
    }

    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait1();                          // tile kt has landed (this thread's part)
        __syncthreads();                           // ... everyone's part; stage (kt-1)%S is free
        const int nk = kt + STAGES - 1;
        if (nk < KT) load_tile(sA, sB, Xb, Wb, K, nk, nk % STAGES, t);
        cp_async_commit();

        const int st = kt % STAGES;
        const float* A_ = As + (st * BM + wm * 64 + g) * LDSM + tig;
        const float* B_ = Bs + (st * BN + wn * 32 + g) * LDSM + tig;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            unsigned bh[4][2], bl[4][2];
#pragma unroll
            for (int ni = 0; ni < 4; ++ni) {
                const float* b = B_ + ni * 8 * LDSM + kk;
                split(b[0], bh[ni][0], bl[ni][0]);     // (k = tig,     n = g)
                split(b[4], bh[ni][1], bl[ni][1]);     // (k = tig + 4, n = g)
            }
#pragma unroll
            for (int mi = 0; mi < 4; ++mi) {
                const float* a = A_ + mi * 16 * LDSM + kk;
                unsigned ah[4], al[4];
                split(a[0],            ah[0], al[0]);  // (g,     tig)
                split(a[8 * LDSM],     ah[1], al[1]);  // (g + 8, tig)
                split(a[4],            ah[2], al[2]);  // (g,     tig + 4)
                split(a[8 * LDSM + 4], ah[3], al[3]);  // (g + 8, tig + 4)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni) mma_tf32(acc[mi][ni], al, bh[ni]);
#pragma unroll
                for (int ni = 0; ni < 4; ++ni) mma_tf32(acc[mi][ni], ah, bl[ni]);
#pragma unroll
                for (int ni = 0; ni < 4; ++ni) mma_tf32(acc[mi][ni], ah, bh[ni]);
            }
        }
    }

    // fused epilogue: + bias, * multiplier, LeakyReLU
#pragma unroll
    for (int ni = 0; ni < 4; ++ni) {
        const int col = bn + wn * 32 + ni * 8 + tig * 2;
        const float b0 = bias[col], b1 = bias[col + 1];
#pragma unroll
        for (int mi = 0; mi < 4; ++mi) {
            const int row = bm + wm * 64 + mi * 16 + g;
            float2 v0, v1;
            v0.x = lrelu((acc[mi][ni][0] + b0) * mult, slope);
            v0.y = lrelu((acc[mi][ni][1] + b1) * mult, slope);
            v1.x = lrelu((acc[mi][ni][2] + b0) * mult, slope);
            v1.y = lrelu((acc[mi][ni][3] + b1) * mult, slope);
            *reinterpret_cast<float2*>(Y + (long long)row * N + col) = v0;
            *reinterpret_cast<float2*>(Y + (long long)(row + 8) * N + col) = v1;
        }
    }
}

// generic epilogue over a library GEMM result (odd shapes only)
extern "C" __global__ void __launch_bounds__(256)
bias_mul_lrelu(const float* __restrict__ Z, const float* __restrict__ bias, float* __restrict__ Y,
               long long n, int N, float mult, float slope)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const float v = (Z[i] + bias[(int)(i % N)]) * mult;
        Y[i] = v > 0.f ? v : v * slope;
    }
}
"""
_mod = cuda.compile(SRC)

_BM, _BN, _BK, _STAGES, _LDSM = 128, 128, 32, 3, 36
_SMEM = _STAGES * (_BM + _BN) * _LDSM * 4   # 110592 bytes -> 2 CTAs per SM


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)
        self.negative_slope = negative_slope

    def forward(self, x):
        x = x.contiguous()
        w = self.gemm.weight.detach().contiguous()
        b = self.gemm.bias.detach().contiguous()
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=torch.float32)
        mult = float(self.multiplier)
        slope = float(self.negative_slope)
        if (M % _BM == 0 and N % _BN == 0 and K % _BK == 0 and K > 0
                and x.data_ptr() % 16 == 0 and w.data_ptr() % 16 == 0):
            _mod.gemm3xtf32_lrelu(grid=(M // _BM, N // _BN), block=(256,), shared_mem=_SMEM,
                                  args=(x, w, b, y, M, N, K, mult, slope))
            return y
        # odd shapes: library GEMM (allowed) + our fused bias/multiply/LeakyReLU
        z = torch.mm(x, w.t())
        n = z.numel()
        blocks = max(1, min((n + 255) // 256, 132 * 16))
        _mod.bias_mul_lrelu(grid=(blocks,), block=(256,), args=(z, b, y, n, N, mult, slope))
        return y
