import torch
import torch.nn as nn

from kforge_kernels import cuda

_ACC_REGS = ", ".join(f"%{i}" for i in range(128))
_ACC_CONS = ", ".join(f'"+f"(d[{i}])' for i in range(128))

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
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void wg_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_wait1() {
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
}
__device__ __forceinline__ void wg_wait0() {
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
__device__ __forceinline__ void acc_fence(float (&d)[128]) {
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}
// K-major operand, 64-byte swizzle: 8-row atoms of 64-byte rows, atoms 512 B apart (SBO); LBO unused
__device__ __forceinline__ unsigned long long desc64(unsigned addr) {
    return (unsigned long long)((addr & 0x3FFFFu) >> 4)
         | (1ull << 16)
         | ((unsigned long long)(512 >> 4) << 32)
         | (2ull << 62);
}
// D[64x256] += A[64x16] * B[256x16]^T, both from shared memory (K-major, no transpose)
__device__ __forceinline__ void wgmma_f16_256(float (&d)[128], unsigned long long da, unsigned long long db) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{@ACC_REGS@}, %128, %129, p, 1, 1, 0, 0;\n"
        "}\n"
        : @ACC_CONS@
        : "l"(da), "l"(db), "r"(1));
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

// one block per row: scale s = 2^sh with amax*s in [2^14, 2^15), hi/lo fp16, inv = 1/s.  K % 4 == 0
extern "C" __global__ void __launch_bounds__(256)
split_rows_f16(const float* __restrict__ src, __half* __restrict__ hi, __half* __restrict__ lo,
               float* __restrict__ inv, int R, int K)
{
    __shared__ float red[8];
    const int row = blockIdx.x;
    if (row >= R) return;                       // whole block leaves together
    const int t = threadIdx.x;
    const int K4 = K >> 2;
    const float4* s4 = reinterpret_cast<const float4*>(src + (long long)row * K);
    float m = 0.f;
#pragma unroll 8
    for (int i = t; i < K4; i += 256) {
        const float4 v = __ldg(s4 + i);
        m = fmaxf(m, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((t & 31) == 0) red[t >> 5] = m;
    __syncthreads();
    m = red[0];
#pragma unroll
    for (int j = 1; j < 8; ++j) m = fmaxf(m, red[j]);
    int sh = 0;
    const unsigned mb = __float_as_uint(m);
    if (m > 0.f && (mb & 0x7f800000u) != 0x7f800000u) {
        sh = 14 - ((int)((mb >> 23) & 0xffu) - 127);
        sh = max(-100, min(100, sh));
    }
    const float s = __uint_as_float((unsigned)(127 + sh) << 23);
    if (t == 0) inv[row] = __uint_as_float((unsigned)(127 - sh) << 23);
    uint2* h2 = reinterpret_cast<uint2*>(hi + (long long)row * K);
    uint2* l2 = reinterpret_cast<uint2*>(lo + (long long)row * K);
#pragma unroll 8
    for (int i = t; i < K4; i += 256) {
        uint2 h, l;
        split4(__ldg(s4 + i), s, h, l);
        h2[i] = h;
        l2[i] = l;
    }
}

// smem tile layout: row r (64 bytes = 4 chunks of 16 B), logical chunk c stored at c ^ ((r>>1)&3)
// (= the wgmma 64-byte swizzle for a 512-byte-aligned tile base)
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
// 2 warpgroups, each owns 64 rows x 256 cols (wgmma m64n256k16, operands from smem)
extern "C" __global__ void __launch_bounds__(NT, 1)
gemm3xf16_wgmma_lrelu(const __half* __restrict__ Ah, const __half* __restrict__ Al,
                      const __half* __restrict__ Bh, const __half* __restrict__ Bl,
                      const float* __restrict__ ix, const float* __restrict__ iw,
                      const float* __restrict__ bias, float* __restrict__ Y,
                      int M, int N, int K, float mult, float slope)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    const unsigned sbase = (smem_u32(smem) + 1023u) & ~1023u;

    const int t = threadIdx.x;
    const int wg = t >> 7;
    const int bm = blockIdx.x * BM, bn = blockIdx.y * BN;

    const __half* gAh = Ah + (long long)bm * K;
    const __half* gAl = Al + (long long)bm * K;
    const __half* gBh = Bh + (long long)bn * K;
    const __half* gBl = Bl + (long long)bn * K;

    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    acc_fence(acc);

    const int KT = K / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_stage(sbase + s * STAGE_BYTES, gAh, gAl, gBh, gBl, K, s * BK, t);
        cp_async_commit();
    }

    const unsigned a_wg = (unsigned)(wg * 64 * 64);     // this warpgroup's 64 rows of A
    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait_stages();                 // tile kt landed (this thread's part)
        fence_proxy_async();                    // generic-proxy smem writes -> async proxy (wgmma)
        __syncthreads();                        // everyone's part

        const unsigned st = sbase + (unsigned)(kt % STAGES) * STAGE_BYTES;
        wg_fence();
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) {
            const unsigned ko = (unsigned)(ks * 32);
            const unsigned long long dAh = desc64(st + a_wg + ko);
            const unsigned long long dAl = desc64(st + OFF_AL + a_wg + ko);
            const unsigned long long dBh = desc64(st + OFF_BH + ko);
            const unsigned long long dBl = desc64(st + OFF_BL + ko);
            wgmma_f16_256(acc, dAl, dBh);
            wgmma_f16_256(acc, dAh, dBl);
            wgmma_f16_256(acc, dAh, dBh);
        }
        wg_commit();
        wg_wait1();                             // group kt-1 (stage (kt-1)%S) finished here
        __syncthreads();                        // ... in both warpgroups

        const int nk = kt + STAGES - 1;         // stage nk%S == (kt-1)%S
        if (nk < KT) load_stage(sbase + (unsigned)(nk % STAGES) * STAGE_BYTES, gAh, gAl, gBh, gBl, K, nk * BK, t);
        cp_async_commit();
    }
    wg_wait0();
    acc_fence(acc);

    // fused epilogue: undo row scales (exact powers of two), + bias, * multiplier, LeakyReLU
    const int lane = t & 31, wq = (t >> 5) & 3;
    const int g = lane >> 2, tig = lane & 3;
    const int row0 = bm + wg * 64 + wq * 16 + g;
    const int row1 = row0 + 8;
    const float x0 = ix[row0], x1 = ix[row1];
    float* y0 = Y + (long long)row0 * N;
    float* y1 = Y + (long long)row1 * N;
#pragma unroll
    for (int n8 = 0; n8 < 32; ++n8) {
        const int col = bn + n8 * 8 + tig * 2;
        const float2 bb = *reinterpret_cast<const float2*>(bias + col);
        const float2 ww = *reinterpret_cast<const float2*>(iw + col);
        float2 v0, v1;
        v0.x = lrelu(((acc[n8 * 4 + 0] * x0) * ww.x + bb.x) * mult, slope);
        v0.y = lrelu(((acc[n8 * 4 + 1] * x0) * ww.y + bb.y) * mult, slope);
        v1.x = lrelu(((acc[n8 * 4 + 2] * x1) * ww.x + bb.x) * mult, slope);
        v1.y = lrelu(((acc[n8 * 4 + 3] * x1) * ww.y + bb.y) * mult, slope);
        *reinterpret_cast<float2*>(y0 + col) = v0;
        *reinterpret_cast<float2*>(y1 + col) = v1;
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
""".replace("@ACC_REGS@", _ACC_REGS).replace("@ACC_CONS@", _ACC_CONS)

_mod = cuda.compile(SRC)

_BM, _BN, _BK, _STAGES = 128, 256, 32, 4
_SMEM = _STAGES * 49152 + 1024   # 197632 bytes (+1 KB for 1024-byte alignment), 1 CTA per SM


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ModelNew, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)
        self.negative_slope = negative_slope
        self._wkey = None
        self._wpack = None
        self._xkey = None
        self._xbuf = None

    def _weight_pack(self, w, N, K, dev):
        p = self.gemm.weight
        try:
            ver = p._version
        except Exception:
            ver = None
        key = (p.data_ptr(), ver, N, K, str(dev))
        if ver is not None and key == self._wkey and self._wpack is not None:
            return self._wpack
        wh = torch.empty((N, K), device=dev, dtype=torch.float16)
        wl = torch.empty((N, K), device=dev, dtype=torch.float16)
        iw = torch.empty((N,), device=dev, dtype=torch.float32)
        _mod.split_rows_f16(grid=(N,), block=(256,), args=(w, wh, wl, iw, N, K))
        if ver is not None:
            self._wkey = key
            self._wpack = (wh, wl, iw)
        return (wh, wl, iw)

    def _x_bufs(self, M, K, dev):
        key = (M, K, str(dev))
        if key != self._xkey or self._xbuf is None:
            self._xbuf = (torch.empty((M, K), device=dev, dtype=torch.float16),
                          torch.empty((M, K), device=dev, dtype=torch.float16),
                          torch.empty((M,), device=dev, dtype=torch.float32))
            self._xkey = key
        return self._xbuf

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
        if (M % _BM == 0 and N % _BN == 0 and K % _BK == 0 and K > 0 and M > 0
                and x.data_ptr() % 16 == 0 and w.data_ptr() % 16 == 0 and b.data_ptr() % 8 == 0):
            wh, wl, iw = self._weight_pack(w, N, K, dev)
            xh, xl, ix = self._x_bufs(M, K, dev)
            _mod.split_rows_f16(grid=(M,), block=(256,), args=(x, xh, xl, ix, M, K))
            _mod.gemm3xf16_wgmma_lrelu(grid=(M // _BM, N // _BN), block=(256,), shared_mem=_SMEM,
                                       args=(xh, xl, wh, wl, ix, iw, b, y, M, N, K, mult, slope))
            return y
        # odd shapes: library GEMM (allowed) + our fused bias/multiply/LeakyReLU
        z = torch.mm(x, w.t())
        n = z.numel()
        blocks = max(1, min((n + 255) // 256, 132 * 16))
        _mod.bias_mul_lrelu(grid=(blocks,), block=(256,), args=(z, b, y, n, N, mult, slope))
        return y
