import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
#include <cuda_fp16.h>

#define BM 128
#define BN 256
#define BK 32                                   // halves per k-tile: 64-byte smem rows
#define STAGES 4
#define NT 256
#define A_TILE_BYTES (BM * BK * 2)              // 8192
#define B_TILE_BYTES (BN * BK * 2)              // 16384
#define OFF_AL (A_TILE_BYTES)
#define OFF_BH (2 * A_TILE_BYTES)
#define OFF_BL (2 * A_TILE_BYTES + B_TILE_BYTES)
#define STAGE_BYTES (2 * A_TILE_BYTES + 2 * B_TILE_BYTES)   // 49152

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
__device__ __forceinline__ void cp_async_wait_stages() {
    asm volatile("cp.async.wait_group 2;\n" ::: "memory");      // STAGES - 2
}
__device__ __forceinline__ void ldsm_x4(unsigned* r, unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void mma_f16(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ float lrelu(float v, float slope) {
    return v > 0.f ? v : v * slope;
}
__device__ __forceinline__ unsigned pack_h2(__half2 h) {
    return *reinterpret_cast<unsigned*>(&h);
}
// v*s = hi + lo (+ ~2^-22 relative), hi and lo fp16; s is a power of two so v*s is exact
__device__ __forceinline__ void split4(float4 v, float s, uint2& h, uint2& l) {
    const float a = v.x * s, b = v.y * s, c = v.z * s, d = v.w * s;
    const __half2 h01 = __floats2half2_rn(a, b);
    const __half2 h23 = __floats2half2_rn(c, d);
    const float2 f01 = __half22float2(h01);
    const float2 f23 = __half22float2(h23);
    const __half2 l01 = __floats2half2_rn(a - f01.x, b - f01.y);
    const __half2 l23 = __floats2half2_rn(c - f23.x, d - f23.y);
    h.x = pack_h2(h01); h.y = pack_h2(h23);
    l.x = pack_h2(l01); l.y = pack_h2(l23);
}

// one warp per row: scale s = 2^sh with amax*s in [2^14, 2^15), hi/lo fp16, inv = 1/s.  K % 4 == 0
extern "C" __global__ void __launch_bounds__(256)
split_rows_f16(const float* __restrict__ src, __half* __restrict__ hi, __half* __restrict__ lo,
               float* __restrict__ inv, int R, int K)
{
    const int row = blockIdx.x * 8 + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (row >= R) return;                       // whole warp leaves together
    const int K4 = K >> 2;
    const float4* s4 = reinterpret_cast<const float4*>(src + (long long)row * K);
    float m = 0.f;
#pragma unroll 4
    for (int i = lane; i < K4; i += 32) {
        const float4 v = __ldg(s4 + i);
        m = fmaxf(m, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    int sh = 0;
    const unsigned mb = __float_as_uint(m);
    if (m > 0.f && (mb & 0x7f800000u) != 0x7f800000u) {
        sh = 14 - ((int)((mb >> 23) & 0xffu) - 127);
        sh = max(-100, min(100, sh));
    }
    const float s = __uint_as_float((unsigned)(127 + sh) << 23);
    if (lane == 0) inv[row] = __uint_as_float((unsigned)(127 - sh) << 23);
    uint2* h2 = reinterpret_cast<uint2*>(hi + (long long)row * K);
    uint2* l2 = reinterpret_cast<uint2*>(lo + (long long)row * K);
#pragma unroll 4
    for (int i = lane; i < K4; i += 32) {
        uint2 h, l;
        split4(__ldg(s4 + i), s, h, l);
        h2[i] = h;
        l2[i] = l;
    }
}

// smem tile layout: row r (64 bytes = 4 chunks of 16 B), logical chunk c stored at c ^ ((r>>1)&3)
__device__ __forceinline__ void load_stage(unsigned sb, const __half* gAh, const __half* gAl,
                                           const __half* gBh, const __half* gBl,
                                           int K, int k0, int t) {
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int idx = t + i * NT;
        const int row = idx >> 2, c = idx & 3;
        const unsigned so = (unsigned)(row * 64 + ((c ^ ((row >> 1) & 3)) << 4));
        const long long go = (long long)row * K + k0 + c * 8;
        cp_async16(sb + so, gAh + go);
        cp_async16(sb + OFF_AL + so, gAl + go);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int idx = t + i * NT;
        const int row = idx >> 2, c = idx & 3;
        const unsigned so = (unsigned)(row * 64 + ((c ^ ((row >> 1) & 3)) << 4));
        const long long go = (long long)row * K + k0 + c * 8;
        cp_async16(sb + OFF_BH + so, gBh + go);
        cp_async16(sb + OFF_BL + so, gBl + go);
    }
}

// Y[M,N] = lrelu(((A[M,K] @ B[N,K]^T) * ix[m] * iw[n] + bias) * mult)
// A = Ah + Al, B = Bh + Bl (fp16, row-scaled);  M%128 == N%256 == K%32 == 0
extern "C" __global__ void __launch_bounds__(NT, 1)
gemm3xf16_lrelu(const __half* __restrict__ Ah, const __half* __restrict__ Al,
                const __half* __restrict__ Bh, const __half* __restrict__ Bl,
                const float* __restrict__ ix, const float* __restrict__ iw,
                const float* __restrict__ bias, float* __restrict__ Y,
                int M, int N, int K, float mult, float slope)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const unsigned sbase = smem_u32(smem);

    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int g = lane >> 2, tig = lane & 3;
    const int wm = warp >> 2;                   // 0..1 : 64 rows each
    const int wn = warp & 3;                    // 0..3 : 64 cols each
    const int bm = blockIdx.x * BM, bn = blockIdx.y * BN;

    const __half* gAh = Ah + (long long)bm * K;
    const __half* gAl = Al + (long long)bm * K;
    const __half* gBh = Bh + (long long)bn * K;
    const __half* gBl = Bl + (long long)bn * K;

    // per-lane ldmatrix offsets (swizzle term depends only on the lane)
    const int sw = (lane >> 1) & 3;
    const int a_row = wm * 64 + (lane & 15);
    const int b_row = wn * 64 + (lane & 7) + ((lane >> 4) << 3);
    unsigned a_off[2], b_off[2];
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
        a_off[ks] = (unsigned)(a_row * 64 + (((ks * 2 + (lane >> 4)) ^ sw) << 4));
        b_off[ks] = (unsigned)(b_row * 64 + (((ks * 2 + ((lane >> 3) & 1)) ^ sw) << 4));
    }

    float acc[4][8][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

    const int KT = K / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_stage(sbase + s * STAGE_BYTES, gAh, gAl, gBh, gBl, K, s * BK, t);
        cp_async_commit();
    }

    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait_stages();                 // tile kt landed (this thread's part)
        __syncthreads();                        // everyone's part; stage (kt-1)%S is free
        const int nk = kt + STAGES - 1;
        if (nk < KT) load_stage(sbase + (nk % STAGES) * STAGE_BYTES, gAh, gAl, gBh, gBl, K, nk * BK, t);
        cp_async_commit();

        const unsigned st = sbase + (kt % STAGES) * STAGE_BYTES;
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) {
            unsigned ah[4][4], al[4][4];
#pragma unroll
            for (int mi = 0; mi < 4; ++mi) {
                ldsm_x4(ah[mi], st + a_off[ks] + mi * 1024);
                ldsm_x4(al[mi], st + OFF_AL + a_off[ks] + mi * 1024);
            }
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                unsigned bh[4], bl[4];
                ldsm_x4(bh, st + OFF_BH + b_off[ks] + p * 1024);
                ldsm_x4(bl, st + OFF_BL + b_off[ks] + p * 1024);
#pragma unroll
                for (int j = 0; j < 2; ++j)
#pragma unroll
                    for (int mi = 0; mi < 4; ++mi)
                        mma_f16(acc[mi][2 * p + j], al[mi], bh[2 * j], bh[2 * j + 1]);
#pragma unroll
                for (int j = 0; j < 2; ++j)
#pragma unroll
                    for (int mi = 0; mi < 4; ++mi)
                        mma_f16(acc[mi][2 * p + j], ah[mi], bl[2 * j], bl[2 * j + 1]);
#pragma unroll
                for (int j = 0; j < 2; ++j)
#pragma unroll
                    for (int mi = 0; mi < 4; ++mi)
                        mma_f16(acc[mi][2 * p + j], ah[mi], bh[2 * j], bh[2 * j + 1]);
            }
        }
    }

    // fused epilogue: undo row scales (exact powers of two), + bias, * multiplier, LeakyReLU
#pragma unroll
    for (int ni = 0; ni < 8; ++ni) {
        const int col = bn + wn * 64 + ni * 8 + tig * 2;
        const float b0 = bias[col], b1 = bias[col + 1];
        const float w0 = iw[col], w1 = iw[col + 1];
#pragma unroll
        for (int mi = 0; mi < 4; ++mi) {
            const int row = bm + wm * 64 + mi * 16 + g;
            const float x0 = ix[row], x1 = ix[row + 8];
            float2 v0, v1;
            v0.x = lrelu(((acc[mi][ni][0] * x0) * w0 + b0) * mult, slope);
            v0.y = lrelu(((acc[mi][ni][1] * x0) * w1 + b1) * mult, slope);
            v1.x = lrelu(((acc[mi][ni][2] * x1) * w0 + b0) * mult, slope);
            v1.y = lrelu(((acc[mi][ni][3] * x1) * w1 + b1) * mult, slope);
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

_BM, _BN, _BK, _STAGES = 128, 256, 32, 4
_SMEM = _STAGES * 49152          # 196608 bytes, 1 CTA per SM


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
        dev = x.device
        y = torch.empty((M, N), device=dev, dtype=torch.float32)
        mult = float(self.multiplier)
        slope = float(self.negative_slope)
        if (M % _BM == 0 and N % _BN == 0 and K % _BK == 0 and K > 0
                and x.data_ptr() % 16 == 0 and w.data_ptr() % 16 == 0):
            xh = torch.empty((M, K), device=dev, dtype=torch.float16)
            xl = torch.empty((M, K), device=dev, dtype=torch.float16)
            ix = torch.empty((M,), device=dev, dtype=torch.float32)
            wh = torch.empty((N, K), device=dev, dtype=torch.float16)
            wl = torch.empty((N, K), device=dev, dtype=torch.float16)
            iw = torch.empty((N,), device=dev, dtype=torch.float32)
            _mod.split_rows_f16(grid=((M + 7) // 8,), block=(256,), args=(x, xh, xl, ix, M, K))
            _mod.split_rows_f16(grid=((N + 7) // 8,), block=(256,), args=(w, wh, wl, iw, N, K))
            _mod.gemm3xf16_lrelu(grid=(M // _BM, N // _BN), block=(256,), shared_mem=_SMEM,
                                 args=(xh, xl, wh, wl, ix, iw, b, y, M, N, K, mult, slope))
            return y
        # odd shapes: library GEMM (allowed) + our fused bias/multiply/LeakyReLU
        z = torch.mm(x, w.t())
        n = z.numel()
        blocks = max(1, min((n + 255) // 256, 132 * 16))
        _mod.bias_mul_lrelu(grid=(blocks,), block=(256,), args=(z, b, y, n, N, mult, slope))
        return y
