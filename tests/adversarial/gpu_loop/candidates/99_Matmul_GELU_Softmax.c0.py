import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
#define BM 128
#define BN 128
#define BK 32
#define LDSA 36                       // smem row stride (floats): conflict-free fragment loads
#define STAGES 4
#define GEMM_THREADS 256
#define STAGE_FLOATS ((BM + BN) * LDSA)

__device__ __forceinline__ float gelu_erf(float y) {
    return 0.5f * y * (1.0f + erff(y * 0.70710678118654752440f));
}

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm volatile("{\n\t.reg .u64 t;\n\tcvta.to.shared.u64 t, %1;\n\tcvt.u32.u64 %0, t;\n\t}\n" : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_pipe() { asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 2) : "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// x = hi + lo: hi = tf32(x) (round to nearest), lo = x - hi (exact in fp32)
__device__ __forceinline__ void split_tf32(float x, unsigned& hi, unsigned& lo) {
    unsigned h;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(h) : "f"(x));
    hi = h;
    lo = __float_as_uint(x - __uint_as_float(h));
}
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_tf32_zc(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
}

// One BK-slice of A (X rows m0..m0+127) and B (W rows n0..n0+127) into a stage; K % 4 == 0.
__device__ __forceinline__ void load_tile(float* stage, const float* __restrict__ X, const float* __restrict__ W,
                                          int M, int N, int K, int m0, int n0, int k0, int tid) {
    const unsigned sA = smem_u32(stage);
    const unsigned sB = smem_u32(stage + BM * LDSA);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int c = tid + i * GEMM_THREADS;   // 0..1023
        const int row = c >> 3;                 // 0..127
        const int col = (c & 7) << 2;           // 0,4,..,28
        const int gk = k0 + col;
        const bool kin = gk < K;
        const unsigned soff = (unsigned)(row * LDSA + col) * 4u;
        {
            const int gm = m0 + row;
            const bool ok = kin && (gm < M);
            const float* src = ok ? (X + (size_t)gm * K + gk) : X;
            cp_async16(sA + soff, src, ok ? 16 : 0);
        }
        {
            const int gn = n0 + row;
            const bool ok = kin && (gn < N);
            const float* src = ok ? (W + (size_t)gn * K + gk) : W;
            cp_async16(sB + soff, src, ok ? 16 : 0);
        }
    }
}

// G[m, n] = gelu(sum_k X[m,k] * W[n,k] + bias[n]),  3xTF32 on tensor cores.
// 8 warps: 2 (M) x 4 (N), warp tile 64 x 32 = 4 x 4 mma tiles of 16 x 8.
extern "C" __global__ void __launch_bounds__(GEMM_THREADS, 1)
gemm3xtf32_bias_gelu(const float* __restrict__ X, const float* __restrict__ W, const float* __restrict__ bias,
                     float* __restrict__ G, int M, int N, int K) {
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 2, wn = warp & 3;
    const int g = lane >> 2, t = lane & 3;
    const int m0 = blockIdx.x * BM;
    const int n0 = blockIdx.y * BN;
    const int KT = (K + BK - 1) / BK;

    float acc[4][4][4];
    float tmp[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < KT) load_tile(smem + s * STAGE_FLOATS, X, W, M, N, K, m0, n0, s * BK, tid);
        cp_async_commit();
    }

    for (int kt = 0; kt < KT; ++kt) {
        cp_async_wait_pipe();
        __syncthreads();   // tile kt visible to all; everyone is done with tile kt-1's stage
        {
            const int nk = kt + STAGES - 1;
            if (nk < KT) load_tile(smem + (nk % STAGES) * STAGE_FLOATS, X, W, M, N, K, m0, n0, nk * BK, tid);
            cp_async_commit();
        }
        const float* As = smem + (kt % STAGES) * STAGE_FLOATS;
        const float* Bs = As + BM * LDSA;
        const float* pa = As + (wm * 64 + g) * LDSA + t;
        const float* pb = Bs + (wn * 32 + g) * LDSA + t;
#pragma unroll
        for (int ks = 0; ks < BK / 8; ++ks) {
            unsigned ah[4][4], al[4][4], bh[4][2], bl[4][2];
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
                const float* p = pa + mt * 16 * LDSA + ks * 8;
                split_tf32(p[0], ah[mt][0], al[mt][0]);                 // (g,   t)
                split_tf32(p[8 * LDSA], ah[mt][1], al[mt][1]);          // (g+8, t)
                split_tf32(p[4], ah[mt][2], al[mt][2]);                 // (g,   t+4)
                split_tf32(p[8 * LDSA + 4], ah[mt][3], al[mt][3]);      // (g+8, t+4)
            }
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
                const float* p = pb + nt * 8 * LDSA + ks * 8;
                split_tf32(p[0], bh[nt][0], bl[nt][0]);                 // (k=t,   n=g)
                split_tf32(p[4], bh[nt][1], bl[nt][1]);                 // (k=t+4, n=g)
            }
#pragma unroll
            for (int mt = 0; mt < 4; ++mt)
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) {
                    if (ks == 0) mma_tf32_zc(tmp[mt][nt], al[mt], bh[nt]);
                    else         mma_tf32(tmp[mt][nt], al[mt], bh[nt]);
                }
#pragma unroll
            for (int mt = 0; mt < 4; ++mt)
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) mma_tf32(tmp[mt][nt], ah[mt], bl[nt]);
#pragma unroll
            for (int mt = 0; mt < 4; ++mt)
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) mma_tf32(tmp[mt][nt], ah[mt], bh[nt]);
        }
        // fp32 round-to-nearest accumulation of the per-tile tensor-core partials
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int r = 0; r < 4; ++r) acc[i][j][r] += tmp[i][j][r];
    }
    cp_async_wait_all();

    // epilogue: + bias, exact GELU, store
    const bool nEven = (N & 1) == 0;
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = m0 + wm * 64 + mt * 16 + g + half * 8;
            if (row < M) {
                float* grow = G + (size_t)row * N;
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) {
                    const int col = n0 + wn * 32 + nt * 8 + 2 * t;
                    const float v0 = acc[mt][nt][half * 2 + 0];
                    const float v1 = acc[mt][nt][half * 2 + 1];
                    if (col + 1 < N) {
                        const float r0 = gelu_erf(v0 + __ldg(bias + col));
                        const float r1 = gelu_erf(v1 + __ldg(bias + col + 1));
                        if (nEven) {
                            *reinterpret_cast<float2*>(grow + col) = make_float2(r0, r1);
                        } else {
                            grow[col] = r0;
                            grow[col + 1] = r1;
                        }
                    } else if (col < N) {
                        grow[col] = gelu_erf(v0 + __ldg(bias + col));
                    }
                }
            }
        }
    }
}

// ---------------- row softmax ----------------
#define SMT 256
#define SMV 8      // float4 per thread: rows up to SMT*4*SMV = 8192 floats

__device__ __forceinline__ float block_max(float v, float* sh) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = sh[0];
    for (int i = 1; i < (int)(blockDim.x >> 5); ++i) r = fmaxf(r, sh[i]);
    __syncthreads();
    return r;
}
__device__ __forceinline__ float block_sum(float v, float* sh) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = sh[0];
    for (int i = 1; i < (int)(blockDim.x >> 5); ++i) r += sh[i];
    __syncthreads();
    return r;
}

// one block per row, row held in registers; apply != 0: v = gelu(v + bias) first (fallback path)
extern "C" __global__ void __launch_bounds__(SMT)
softmax_rows_v4(const float4* __restrict__ G, const float4* __restrict__ bias, float4* __restrict__ out,
                int N4, int apply) {
    __shared__ float sh[32];
    const float NEG = __int_as_float(0xff800000);
    const size_t base = (size_t)blockIdx.x * (size_t)N4;
    const float4* g = G + base;
    float4* o = out + base;
    float4 v[SMV];
#pragma unroll
    for (int u = 0; u < SMV; ++u) {
        const int i = threadIdx.x + u * SMT;
        if (i < N4) {
            float4 a = __ldcs(g + i);
            if (apply) {
                const float4 bb = __ldg(bias + i);
                a.x = gelu_erf(a.x + bb.x); a.y = gelu_erf(a.y + bb.y);
                a.z = gelu_erf(a.z + bb.z); a.w = gelu_erf(a.w + bb.w);
            }
            v[u] = a;
        } else {
            v[u] = make_float4(NEG, NEG, NEG, NEG);
        }
    }
    float m = NEG;
#pragma unroll
    for (int u = 0; u < SMV; ++u) m = fmaxf(m, fmaxf(fmaxf(v[u].x, v[u].y), fmaxf(v[u].z, v[u].w)));
    m = block_max(m, sh);
    float s = 0.f;
#pragma unroll
    for (int u = 0; u < SMV; ++u) {
        v[u].x = expf(v[u].x - m); v[u].y = expf(v[u].y - m);
        v[u].z = expf(v[u].z - m); v[u].w = expf(v[u].w - m);
        s += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    s = block_sum(s, sh);
#pragma unroll
    for (int u = 0; u < SMV; ++u) {
        const int i = threadIdx.x + u * SMT;
        if (i < N4) {
            float4 r;
            r.x = v[u].x / s; r.y = v[u].y / s; r.z = v[u].z / s; r.w = v[u].w / s;
            o[i] = r;
        }
    }
}

__device__ __forceinline__ void ms_combine(float& m, float& s, float m2, float s2) {
    const float mm = fmaxf(m, m2);
    const float a = (m == mm) ? s : s * expf(m - mm);
    const float b = (m2 == mm) ? s2 : s2 * expf(m2 - mm);
    m = mm;
    s = a + b;
}

// generic row softmax (any N): online max/sum, then a second pass over the row
extern "C" __global__ void __launch_bounds__(SMT)
softmax_rows_gen(const float* __restrict__ G, const float* __restrict__ bias, float* __restrict__ out,
                 int N, int apply) {
    __shared__ float shm[32], shs[32];
    const float NEG = __int_as_float(0xff800000);
    const size_t base = (size_t)blockIdx.x * (size_t)N;
    const float* g = G + base;
    float* o = out + base;
    float m = NEG, s = 0.f;
    for (int i = threadIdx.x; i < N; i += SMT) {
        float v = g[i];
        if (apply) v = gelu_erf(v + bias[i]);
        ms_combine(m, s, v, 1.0f);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, off);
        ms_combine(m, s, m2, s2);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { shm[warp] = m; shs[warp] = s; }
    __syncthreads();
    float M_ = shm[0], S_ = shs[0];
    for (int w = 1; w < SMT / 32; ++w) ms_combine(M_, S_, shm[w], shs[w]);
    for (int i = threadIdx.x; i < N; i += SMT) {
        float v = g[i];
        if (apply) v = gelu_erf(v + bias[i]);
        o[i] = expf(v - M_) / S_;
    }
}
"""
_mod = cuda.compile(SRC)

_BM = 128
_BN = 128
_BK = 32
_LDSA = 36
_STAGES = 4
_SMEM = _STAGES * (_BM + _BN) * _LDSA * 4   # 147456 bytes
_SMT = 256
_SMV = 8


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super(ModelNew, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        W = self.linear.weight.detach().contiguous()
        b = self.linear.bias.detach().contiguous()
        M, K = x.shape
        N = W.shape[0]
        out = torch.empty((M, N), dtype=x.dtype, device=x.device)
        if M == 0 or N == 0:
            return out
        fast = (K > 0 and K % 4 == 0 and x.data_ptr() % 16 == 0 and W.data_ptr() % 16 == 0)
        if fast:
            G = torch.empty((M, N), dtype=x.dtype, device=x.device)
            grid = ((M + _BM - 1) // _BM, (N + _BN - 1) // _BN)
            _mod.gemm3xtf32_bias_gelu(grid=grid, block=(256,), shared_mem=_SMEM,
                                      args=(x, W, b, G, M, N, K))
            apply = 0
        else:
            G = torch.mm(x, W.t()).contiguous()   # allowed library GEMM; bias + GELU fused below
            apply = 1
        if N % 4 == 0 and N <= _SMT * 4 * _SMV and G.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0:
            _mod.softmax_rows_v4(grid=(M,), block=(_SMT,), args=(G, b, out, N // 4, apply))
        else:
            _mod.softmax_rows_gen(grid=(M,), block=(_SMT,), args=(G, b, out, N, apply))
        return out
