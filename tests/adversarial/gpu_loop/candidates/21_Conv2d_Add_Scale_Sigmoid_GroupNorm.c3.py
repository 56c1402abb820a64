import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge_kernels import cuda

# ---------------------------------------------------------------------------
# Fast path (Cin = 8, 3x3, Cout = 32, 8 groups, stride 1, no padding):
# one persistent kernel, grid = k * Tc CTAs (all co-resident, 2 per SM).
# CTA b owns conv tile j = b % Tc (8 output rows x 64 cols x 32 channels) of the
# samples n = b / Tc, b / Tc + k, ...  Per item:
#   split the prefetched raw input tile into tf32 hi / lo, issue the cp.async of the
#   next sample's tile, 3xTF32 mma.sync conv, z = sigmoid(((conv + cb) + bias) * scale)
#   kept in registers, exact per-tile group moments -> part, arrival counter; the last
#   CTA of the sample merges the Tc partials and publishes (mean, rstd) per group,
#   the others wait on the flag; then the tile is normalised in registers and written
#   once (smem transpose, coalesced float2 streaming stores).
# ---------------------------------------------------------------------------
FUSED_SRC = r"""
#define CIN 8
#define COUT 32
#define NG 8
#define TH 8
#define TW 64
#define IR (TH + 2)          // input rows per tile
#define NQ 17                // float4 per staged input row (68 floats, 66 needed)
#define RS 72                // smem row stride (floats)
#define PS 728               // smem channel-plane stride (floats); PS % 32 == 24 -> conflict-free A loads
#define XS (CIN * PS)        // floats per input copy (raw, hi or lo)
#define NWB (9 * 4 * 32)     // float4 entries of pre-split B fragments
#define CSO 516              // output staging channel stride (floats); 2*CSO % 32 == 8

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm volatile("{\n\t.reg .u64 t;\n\tcvta.to.shared.u64 t, %1;\n\tcvt.u32.u64 %0, t;\n\t}\n"
                 : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ void cp_async16_zfill(unsigned dst, const void* src, unsigned nbytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(dst), "l"(src), "r"(nbytes) : "memory");
}
__device__ __forceinline__ float tf32r(float v) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
    return __uint_as_float(r);
}
__device__ __forceinline__ void mma_tf32(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ int ld_acquire(const int* p) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(int* p, int v) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;\n" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ float4 ldcg4(const float4* p) {
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ float ldcg1(const float* p) {
    float v;
    asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void stcs2(float* p, float a, float b) {
    asm volatile("st.global.cs.v2.f32 [%0], {%1,%2};\n" :: "l"(p), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ void stcs1(float* p, float v) {
    asm volatile("st.global.cs.f32 [%0], %1;\n" :: "l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ void chan(float& n, float& m, float& q, float n2, float m2, float q2) {
    if (n2 == 0.f) return;
    if (n == 0.f) { n = n2; m = m2; q = q2; return; }
    const float nn = n + n2;
    const float d = m2 - m;
    const float f = n2 / nn;
    m = m + d * f;
    q = q + q2 + d * d * n * f;
    n = nn;
}
// cp.async of the raw input tile (CIN x IR rows x 68 cols) of sample n into sraw
__device__ __forceinline__ void load_tile(unsigned sb, const float* __restrict__ x, int n,
                                          int oh0, int ow0, int H, int W, int t) {
    const float* xn = x + (long long)n * CIN * H * W;
    for (int i = t; i < CIN * IR * NQ; i += 256) {
        const int rr = i / NQ, q = i - rr * NQ;
        const int ci = rr / IR, r = rr - ci * IR;
        const int ih = oh0 + r, iw = ow0 + 4 * q;
        const bool ok = (ih < H) && (iw < W);
        const float* src = ok ? (xn + ((long long)ci * H + ih) * W + iw) : x;
        cp_async16_zfill(sb + (unsigned)((ci * PS + r * RS + 4 * q) * 4), src, ok ? 16u : 0u);
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

extern "C" __global__ void __launch_bounds__(256, 2)
fused_conv_gn(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ cb,
              const float* __restrict__ bias, const float* __restrict__ scale,
              const float* __restrict__ gamma, const float* __restrict__ beta,
              float* out, float4* part, int* ctr, float* stat,
              int N, int H, int W, int OH, int OW, int tilesW, int Tc, int kstep, int ev, float eps)
{
    extern __shared__ float4 smem4[];
    float4* swb = smem4;                                        // [tap][nt][lane] (bh0, bh1, bl0, bl1)
    float* sxh = reinterpret_cast<float*>(smem4 + NWB);         // [ci][row][col] tf32 hi
    float* sxl = sxh + XS;                                      // tf32 lo
    float* sraw = sxl + XS;                                     // raw fp32 (cp.async target)
    float* stg = sxh;                                           // output staging (hi/lo region)
    __shared__ float s_cb[COUT], s_bias[COUT], s_scale[COUT], s_gamma[COUT], s_beta[COUT];
    __shared__ float4 s_wp[8][NG];
    __shared__ float2 s_st[NG];
    __shared__ int s_last;

    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int g = lane >> 2, tq = lane & 3;
    const int j = blockIdx.x % Tc;
    const int s0 = blockIdx.x / Tc;
    const int th = j / tilesW, tw = j - th * tilesW;
    const int oh0 = th * TH, ow0 = tw * TW;
    const unsigned sraw_u = smem_u32(sraw);
    int* done = ctr;
    int* flag = ctr + N;
    const long long planeHW = (long long)OH * OW;

    // first tile's input in flight while the weights are prepared
    if (s0 < N) load_tile(sraw_u, x, s0, oh0, ow0, H, W, t);

    // weights, pre-split into tf32 hi/lo, in B-fragment order (once per block)
    for (int i = t; i < NWB; i += 256) {
        const int tap = i >> 7, nt = (i >> 5) & 3, ln = i & 31;
        const int co = nt * 8 + (ln >> 2), ci = ln & 3;
        const float v0 = w[(co * CIN + ci) * 9 + tap];
        const float v1 = w[(co * CIN + ci + 4) * 9 + tap];
        const float h0 = tf32r(v0), h1 = tf32r(v1);
        swb[i] = make_float4(h0, h1, tf32r(v0 - h0), tf32r(v1 - h1));
    }
    if (t < COUT) {
        s_cb[t] = cb[t]; s_bias[t] = bias[t]; s_scale[t] = scale[t];
        s_gamma[t] = gamma[t]; s_beta[t] = beta[t];
    }

    const int oh = oh0 + warp;
    int vcw = OW - ow0;
    if (vcw > TW) vcw = TW;
    if (oh >= OH) vcw = 0;

    for (int n = s0; n < N; n += kstep) {
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        __syncthreads();                       // previous item done with the hi/lo region
        // split own raw float4s into tf32 hi / lo
        for (int i = t; i < CIN * IR * NQ; i += 256) {
            const int rr = i / NQ, q = i - rr * NQ;
            const int ci = rr / IR, r = rr - ci * IR;
            const int off = ci * PS + r * RS + 4 * q;
            const float4 v = *reinterpret_cast<const float4*>(sraw + off);
            float4 h, l;
            h.x = tf32r(v.x); l.x = tf32r(v.x - h.x);
            h.y = tf32r(v.y); l.y = tf32r(v.y - h.y);
            h.z = tf32r(v.z); l.z = tf32r(v.z - h.z);
            h.w = tf32r(v.w); l.w = tf32r(v.w - h.w);
            *reinterpret_cast<float4*>(sxh + off) = h;
            *reinterpret_cast<float4*>(sxl + off) = l;
        }
        __syncthreads();
        // prefetch the next sample's tile (raw buffer is free now)
        if (n + kstep < N) load_tile(sraw_u, x, n + kstep, oh0, ow0, H, W, t);

        // ---------------- 3xTF32 implicit-GEMM conv ----------------
        float acc[4][4][4];
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
            const float c0 = s_cb[nt * 8 + 2 * tq], c1 = s_cb[nt * 8 + 2 * tq + 1];
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
                acc[mt][nt][0] = c0; acc[mt][nt][1] = c1;
                acc[mt][nt][2] = c0; acc[mt][nt][3] = c1;
            }
        }
        const float* ahb = sxh + tq * PS + warp * RS + g;
        const float* alb = sxl + tq * PS + warp * RS + g;
#pragma unroll
        for (int kh = 0; kh < 3; ++kh) {
#pragma unroll
            for (int kw = 0; kw < 3; ++kw) {
                const int tap = kh * 3 + kw;
                unsigned bh[4][2], bl[4][2];
#pragma unroll
                for (int nt = 0; nt < 4; ++nt) {
                    const float4 q = swb[(tap * 4 + nt) * 32 + lane];
                    bh[nt][0] = __float_as_uint(q.x); bh[nt][1] = __float_as_uint(q.y);
                    bl[nt][0] = __float_as_uint(q.z); bl[nt][1] = __float_as_uint(q.w);
                }
#pragma unroll
                for (int mt = 0; mt < 4; ++mt) {
                    const int o = kh * RS + mt * 16 + kw;
                    unsigned ah[4], al[4];
                    ah[0] = __float_as_uint(ahb[o]);
                    ah[1] = __float_as_uint(ahb[o + 8]);
                    ah[2] = __float_as_uint(ahb[o + 4 * PS]);
                    ah[3] = __float_as_uint(ahb[o + 4 * PS + 8]);
                    al[0] = __float_as_uint(alb[o]);
                    al[1] = __float_as_uint(alb[o + 8]);
                    al[2] = __float_as_uint(alb[o + 4 * PS]);
                    al[3] = __float_as_uint(alb[o + 4 * PS + 8]);
#pragma unroll
                    for (int nt = 0; nt < 4; ++nt) {
                        mma_tf32(acc[mt][nt], al[0], al[1], al[2], al[3], bh[nt][0], bh[nt][1]);
                        mma_tf32(acc[mt][nt], ah[0], ah[1], ah[2], ah[3], bl[nt][0], bl[nt][1]);
                        mma_tf32(acc[mt][nt], ah[0], ah[1], ah[2], ah[3], bh[nt][0], bh[nt][1]);
                    }
                }
            }
        }

        // ---------------- z = sigmoid(((conv + cb) + bias) * scale), warp moments ----------------
        float s1[4];
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
            s1[nt] = 0.f;
            const int ca = nt * 8 + 2 * tq;
            const float ba = s_bias[ca], bb = s_bias[ca + 1];
            const float sa = s_scale[ca], sbb = s_scale[ca + 1];
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const float bv = (i & 1) ? bb : ba;
                    const float sv = (i & 1) ? sbb : sa;
                    const float tt = (acc[mt][nt][i] + bv) * sv;
                    const float zz = __fdividef(1.f, 1.f + __expf(-tt));
                    acc[mt][nt][i] = zz;
                    const int col = mt * 16 + g + ((i & 2) ? 8 : 0);
                    if (col < vcw) s1[nt] += zz;
                }
            }
        }
        const float cntw = 4.f * (float)vcw;
        float mw[4], q2[4];
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
            float v = s1[nt];
            v += __shfl_xor_sync(0xffffffffu, v, 1);
            v += __shfl_xor_sync(0xffffffffu, v, 4);
            v += __shfl_xor_sync(0xffffffffu, v, 8);
            v += __shfl_xor_sync(0xffffffffu, v, 16);
            mw[nt] = (vcw > 0) ? v / cntw : 0.f;
            float qq = 0.f;
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int col = mt * 16 + g + ((i & 2) ? 8 : 0);
                    if (col < vcw) { const float d = acc[mt][nt][i] - mw[nt]; qq = fmaf(d, d, qq); }
                }
            }
            qq += __shfl_xor_sync(0xffffffffu, qq, 1);
            qq += __shfl_xor_sync(0xffffffffu, qq, 4);
            qq += __shfl_xor_sync(0xffffffffu, qq, 8);
            qq += __shfl_xor_sync(0xffffffffu, qq, 16);
            q2[nt] = qq;
        }
        if ((lane & ~2) == 0) {            // lane 0: groups 2nt, lane 2: groups 2nt+1
            const int half = lane >> 1;
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
                s_wp[warp][2 * nt + half] = make_float4(cntw, mw[nt], q2[nt], 0.f);
        }
        __syncthreads();                   // also: every warp is past its MMA (hi/lo region free)
        if (t < NG) {
            float cn = 0.f, mn = 0.f, qq = 0.f;
#pragma unroll
            for (int ww = 0; ww < 8; ++ww) {
                const float4 p = s_wp[ww][t];
                chan(cn, mn, qq, p.x, p.y, p.z);
            }
            part[((long long)n * NG + t) * Tc + j] = make_float4(cn, mn, qq, 0.f);
        }
        __threadfence();
        __syncthreads();
        if (t == 0) {
            const int old = atomicAdd(done + n, 1);
            s_last = (old == Tc - 1) ? 1 : 0;
        }
        __syncthreads();

        // ---------------- per-sample barrier: group statistics ----------------
        if (s_last) {
            __threadfence();
            {   // warp w merges the Tc partials of group w
                float cn = 0.f, mn = 0.f, qq = 0.f;
                const float4* pp = part + ((long long)n * NG + warp) * Tc;
                for (int i = lane; i < Tc; i += 32) {
                    const float4 p = ldcg4(pp + i);
                    chan(cn, mn, qq, p.x, p.y, p.z);
                }
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) {
                    const float n2 = __shfl_xor_sync(0xffffffffu, cn, o);
                    const float m2 = __shfl_xor_sync(0xffffffffu, mn, o);
                    const float qv = __shfl_xor_sync(0xffffffffu, qq, o);
                    chan(cn, mn, qq, n2, m2, qv);
                }
                if (lane == 0) {
                    const float var = fmaxf(qq / cn, 0.f);
                    const float rstd = 1.f / sqrtf(var + eps);
                    s_st[warp] = make_float2(mn, rstd);
                    stat[((long long)n * NG + warp) * 2] = mn;
                    stat[((long long)n * NG + warp) * 2 + 1] = rstd;
                }
            }
            __threadfence();
            __syncthreads();
            if (t == 0) { __threadfence(); st_release(flag + n, 1); }
        } else {
            if (t == 0) {
                while (ld_acquire(flag + n) == 0) __nanosleep(64);
                __threadfence();
            }
            __syncthreads();
            if (t < NG) {
                const float* sp = stat + ((long long)n * NG + t) * 2;
                s_st[t] = make_float2(ldcg1(sp), ldcg1(sp + 1));
            }
            __syncthreads();
        }

        // ---------------- normalise in registers ----------------
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
            const float2 st = s_st[2 * nt + (tq >> 1)];
            const int ca = nt * 8 + 2 * tq;
            const float a0 = st.y * s_gamma[ca], b0 = s_beta[ca];
            const float a1 = st.y * s_gamma[ca + 1], b1 = s_beta[ca + 1];
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    acc[mt][nt][i] = fmaf(acc[mt][nt][i] - st.x, (i & 1) ? a1 : a0, (i & 1) ? b1 : b0);
            }
        }

        // ---------------- store: smem transpose, 16 channels at a time ----------------
        float* obase = out + ((long long)n * COUT * OH + oh) * OW + ow0;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (h) __syncthreads();            // first half read out before it is overwritten
#pragma unroll
            for (int u = 0; u < 2; ++u) {
#pragma unroll
                for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const int cl = u * 8 + 2 * tq + (i & 1);
                        const int col = mt * 16 + g + ((i & 2) ? 8 : 0);
                        stg[cl * CSO + warp * 64 + col] = acc[mt][2 * h + u][i];
                    }
                }
            }
            __syncthreads();
            if (vcw > 0) {
                const float* srow = stg + warp * 64;
                float* orow = obase + (long long)(16 * h) * planeHW;
                if (ev) {
                    if (2 * lane < vcw) {
#pragma unroll 4
                        for (int cl = 0; cl < 16; ++cl) {
                            const float2 v = *reinterpret_cast<const float2*>(srow + cl * CSO + 2 * lane);
                            stcs2(orow + cl * planeHW + 2 * lane, v.x, v.y);
                        }
                    }
                } else {
#pragma unroll 4
                    for (int cl = 0; cl < 16; ++cl) {
                        if (lane < vcw) stcs1(orow + cl * planeHW + lane, srow[cl * CSO + lane]);
                        if (lane + 32 < vcw) stcs1(orow + cl * planeHW + lane + 32, srow[cl * CSO + lane + 32]);
                    }
                }
            }
        }
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}
"""

# ---------------------------------------------------------------------------
# Generic fallback (other configurations): library conv, then sigmoid + stats and
# the GroupNorm apply pass in our kernels.
# ---------------------------------------------------------------------------
GEN_SRC = r"""
__device__ __forceinline__ float block_sum8(float v, float* red) {   // blockDim == 256
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    return ((red[0] + red[1]) + (red[2] + red[3])) + ((red[4] + red[5]) + (red[6] + red[7]));
}
__device__ __forceinline__ void chan(float& n, float& m, float& q, float n2, float m2, float q2) {
    if (n2 == 0.f) return;
    if (n == 0.f) { n = n2; m = m2; q = q2; return; }
    const float nn = n + n2;
    const float d = m2 - m;
    const float f = n2 / nn;
    m = m + d * f;
    q = q + q2 + d * d * n * f;
    n = nn;
}

extern "C" __global__ void __launch_bounds__(256)
sig_stats(float* __restrict__ y, const float* __restrict__ bias, const float* __restrict__ scale,
          float4* __restrict__ part, int CPG, long long HW, int G, int chunk)
{
    __shared__ float red1[8], red2[8];
    const int ng = blockIdx.y, g = ng % G;
    float* slab = y + (long long)ng * CPG * HW;
    const long long len = (long long)CPG * HW;
    const long long start = (long long)blockIdx.x * chunk;
    float z[16];
    float lsum = 0.f;
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        const long long e = start + k * 256 + threadIdx.x;
        z[k] = 0.f;
        if (k * 256 + (int)threadIdx.x < chunk && e < len) {
            const int c = g * CPG + (int)(e / HW);
            const float v = (slab[e] + bias[c]) * scale[c];
            const float zz = 1.f / (1.f + expf(-v));
            slab[e] = zz;
            z[k] = zz;
            lsum += zz;
        }
    }
    long long rem = len - start;
    const float cnt = (float)(rem < chunk ? rem : chunk);
    const float tot = block_sum8(lsum, red1);
    const float mb = tot / cnt;
    float lq = 0.f;
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        const long long e = start + k * 256 + threadIdx.x;
        if (k * 256 + (int)threadIdx.x < chunk && e < len) { const float d = z[k] - mb; lq = fmaf(d, d, lq); }
    }
    const float m2 = block_sum8(lq, red2);
    if (threadIdx.x == 0) part[(long long)ng * gridDim.x + blockIdx.x] = make_float4(cnt, mb, m2, 0.f);
}

extern "C" __global__ void __launch_bounds__(256)
gn_apply(float* __restrict__ y, const float4* __restrict__ part, const float* __restrict__ gamma,
         const float* __restrict__ beta, int P, int CPG, long long HW, int G, float eps,
         int chunk, int vec)
{
    __shared__ float s_mean, s_rstd;
    const int ng = blockIdx.y, g = ng % G;
    if (threadIdx.x < 32) {
        float cn = 0.f, mn = 0.f, q = 0.f;
        for (int i = threadIdx.x; i < P; i += 32) {
            const float4 p = part[(long long)ng * P + i];
            chan(cn, mn, q, p.x, p.y, p.z);
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float n2 = __shfl_xor_sync(0xffffffffu, cn, o);
            const float m2 = __shfl_xor_sync(0xffffffffu, mn, o);
            const float q2 = __shfl_xor_sync(0xffffffffu, q, o);
            chan(cn, mn, q, n2, m2, q2);
        }
        if (threadIdx.x == 0) {
            const float var = fmaxf(q / cn, 0.f);
            s_mean = mn;
            s_rstd = 1.f / sqrtf(var + eps);
        }
    }
    __syncthreads();
    const float mean = s_mean, rstd = s_rstd;
    float* slab = y + (long long)ng * CPG * HW;
    const long long len = (long long)CPG * HW;
    const long long start = (long long)blockIdx.x * chunk;
    long long end = start + chunk;
    if (end > len) end = len;
    if (vec) {
        long long e = start + 4 * (long long)threadIdx.x;
        if (e < end) {
            int cl = (int)(e / HW);
            long long bound = (long long)(cl + 1) * HW;
            float a = rstd * gamma[g * CPG + cl], b = beta[g * CPG + cl];
#pragma unroll 4
            for (; e < end; e += 1024) {
                if (e >= bound) {
                    while (e >= bound) { ++cl; bound += HW; }
                    a = rstd * gamma[g * CPG + cl]; b = beta[g * CPG + cl];
                }
                float4 v = *reinterpret_cast<float4*>(slab + e);
                v.x = fmaf(v.x - mean, a, b);
                v.y = fmaf(v.y - mean, a, b);
                v.z = fmaf(v.z - mean, a, b);
                v.w = fmaf(v.w - mean, a, b);
                *reinterpret_cast<float4*>(slab + e) = v;
            }
        }
    } else {
        for (long long e = start + threadIdx.x; e < end; e += 256) {
            const int c = g * CPG + (int)(e / HW);
            slab[e] = fmaf(slab[e] - mean, rstd * gamma[c], beta[c]);
        }
    }
}
"""

_fused = cuda.compile(FUSED_SRC)
_gen = cuda.compile(GEN_SRC)

_CHUNK = 4096
_TH, _TW = 8, 64
_SMEM = 9 * 4 * 32 * 16 + 3 * 8 * 728 * 4     # pre-split weights + raw / hi / lo input tiles = 88320 B


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups, bias_shape, scale_shape):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.group_norm = nn.GroupNorm(num_groups, out_channels)
        self._nsm = None

    def forward(self, x):
        x = x.contiguous()
        conv = self.conv
        wt = conv.weight.detach().contiguous()
        Cout, Cin, KH, KW = wt.shape
        if conv.bias is not None:
            cb = conv.bias.detach().contiguous()
        else:
            cb = torch.zeros(Cout, device=x.device, dtype=torch.float32)
        bias = self.bias.detach().reshape(-1).contiguous()
        scale = self.scale.detach().reshape(-1).contiguous()
        G = self.group_norm.num_groups
        CPG = Cout // G
        gamma = self.group_norm.weight.detach().contiguous()
        beta = self.group_norm.bias.detach().contiguous()
        eps = float(self.group_norm.eps)
        N, _, H, W = x.shape

        simple_conv = (tuple(conv.stride) == (1, 1) and tuple(conv.padding) == (0, 0)
                       and tuple(conv.dilation) == (1, 1) and conv.groups == 1
                       and KH == KW)
        KS = KH
        OH, OW = H - KS + 1, W - KS + 1
        fast = (simple_conv and Cin == 8 and KS == 3 and Cout == 32 and G == 8
                and x.dtype == torch.float32 and wt.dtype == torch.float32
                and W % 4 == 0 and OH > 0 and OW > 0 and N > 0
                and x.data_ptr() % 16 == 0)

        if fast:
            if self._nsm is None:
                self._nsm = torch.cuda.get_device_properties(x.device).multi_processor_count
            tilesW = (OW + _TW - 1) // _TW
            tilesH = (OH + _TH - 1) // _TH
            Tc = tilesW * tilesH
            kstep = min((2 * self._nsm) // Tc, N)     # all k * Tc CTAs co-resident (2 per SM)
            fast = kstep >= 1

        if fast:
            out = torch.empty((N, Cout, OH, OW), device=x.device, dtype=torch.float32)
            part = torch.empty((N * G * Tc, 4), device=x.device, dtype=torch.float32)
            stat = torch.empty((N * G * 2,), device=x.device, dtype=torch.float32)
            ctr = torch.zeros(2 * N, device=x.device, dtype=torch.int32)   # done[N], flag[N]
            grid = kstep * Tc
            ev = 1 if OW % 2 == 0 else 0
            _fused.fused_conv_gn(grid=(grid,), block=(256,), shared_mem=_SMEM,
                                 args=(x, wt, cb, bias, scale, gamma, beta, out, part, ctr, stat,
                                       N, H, W, OH, OW, tilesW, Tc, kstep, ev, eps))
            return out

        # library convolution (allowed); everything after it in our kernels
        out = F.conv2d(x, wt, cb, conv.stride, conv.padding, conv.dilation, conv.groups).contiguous()
        N, Cout, OH, OW = out.shape
        HW = OH * OW
        L = CPG * HW
        P = (L + _CHUNK - 1) // _CHUNK
        part = torch.empty((N * G * P, 4), device=x.device, dtype=torch.float32)
        _gen.sig_stats(grid=(P, N * G), block=(256,),
                       args=(out, bias, scale, part, CPG, HW, G, _CHUNK))
        vec = 1 if (L % 4 == 0 and HW % 4 == 0 and out.data_ptr() % 16 == 0) else 0
        _gen.gn_apply(grid=(P, N * G), block=(256,),
                      args=(out, part, gamma, beta, P, CPG, HW, G, eps, _CHUNK, vec))
        return out
