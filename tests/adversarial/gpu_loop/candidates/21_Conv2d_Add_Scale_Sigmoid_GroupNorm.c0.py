import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge_kernels import cuda

# ---------------------------------------------------------------------------
# Fused conv (CIN, KS compile-time) + bias + scale + sigmoid + GroupNorm partials.
# Block: one (n, group of 4 channels), output tile 32 rows x 64 cols; 256 threads,
# thread (ty, tx): row ty, cols {4tx..4tx+3} and {32+4tx..32+4tx+3}, 4 channels.
# ---------------------------------------------------------------------------
CONV_SRC = r"""
#define TH 32
#define TW 64
#define NV4 ((KS + 6) / 4)              // float4 loads per half-row window (needs KS+3 floats)
#define SW (60 + 4 * NV4)               // smem row width in floats (multiple of 4)
#define SR (TH + KS - 1)                // smem rows per input channel
#define SW4 (SW / 4)

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    unsigned r;
    asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ void cp_async16_zfill(unsigned saddr, const void* g, unsigned nbytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(saddr), "l"(g), "r"(nbytes) : "memory");
}
__device__ __forceinline__ float block_sum8(float v, float* red) {   // blockDim == 256
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    return ((red[0] + red[1]) + (red[2] + red[3])) + ((red[4] + red[5]) + (red[6] + red[7]));
}

extern "C" __global__ void __launch_bounds__(256, 3)
conv_sig_stats(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ cb,
               const float* __restrict__ bias, const float* __restrict__ scale,
               float* __restrict__ out, float4* __restrict__ part,
               int H, int W, int OH, int OW, int G, int tilesW, int vec2)
{
    extern __shared__ __align__(16) float sm[];
    float* sin = sm;                                         // CIN * SR * SW
    float4* swt = reinterpret_cast<float4*>(sm + CIN * SR * SW);  // CIN*KS*KS x (4 channels)
    __shared__ float red1[8], red2[8];

    const int tile = blockIdx.x, g = blockIdx.y, n = blockIdx.z;
    const int Cout = G * 4;
    const int th = tile / tilesW, tw = tile - th * tilesW;
    const int oh0 = th * TH, ow0 = tw * TW;
    const int t = threadIdx.x, tx = t & 7, ty = t >> 3;

    // weights of this group's 4 output channels, interleaved as float4
    {
        const int st = CIN * KS * KS;
        const float* wg = w + (long long)(g * 4) * st;
        for (int i = t; i < st; i += 256) {
            float4 v;
            v.x = wg[i]; v.y = wg[st + i]; v.z = wg[2 * st + i]; v.w = wg[3 * st + i];
            swt[i] = v;
        }
    }
    // input tile (zero-filled outside the image); W % 4 == 0 so a float4 is all-in or all-out
    {
        const float* xn = x + (long long)n * CIN * H * W;
        const unsigned sb = smem_u32(sin);
        for (int i = t; i < CIN * SR * SW4; i += 256) {
            const int rr = i / SW4, q = i - rr * SW4;       // rr = ci * SR + r
            const int ci = rr / SR, r = rr - ci * SR;
            const int ih = oh0 + r, iw = ow0 + q * 4;
            const bool ok = (ih < H) && (iw < W);
            const float* src = ok ? (xn + ((long long)ci * H + ih) * W + iw) : x;
            cp_async16_zfill(sb + (unsigned)((rr * SW + q * 4) * 4), src, ok ? 16u : 0u);
        }
        asm volatile("cp.async.wait_all;\n" ::: "memory");
    }
    __syncthreads();

    float acc[4][8];
#pragma unroll
    for (int co = 0; co < 4; ++co)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[co][j] = 0.f;

#pragma unroll 2
    for (int ci = 0; ci < CIN; ++ci) {
#pragma unroll
        for (int kh = 0; kh < KS; ++kh) {
            const float* rowp = sin + (ci * SR + ty + kh) * SW + 4 * tx;
            float a[4 * NV4], b[4 * NV4];
#pragma unroll
            for (int v = 0; v < NV4; ++v) {
                const float4 fa = *reinterpret_cast<const float4*>(rowp + 4 * v);
                const float4 fb = *reinterpret_cast<const float4*>(rowp + 32 + 4 * v);
                a[4 * v + 0] = fa.x; a[4 * v + 1] = fa.y; a[4 * v + 2] = fa.z; a[4 * v + 3] = fa.w;
                b[4 * v + 0] = fb.x; b[4 * v + 1] = fb.y; b[4 * v + 2] = fb.z; b[4 * v + 3] = fb.w;
            }
#pragma unroll
            for (int kw = 0; kw < KS; ++kw) {
                const float4 wv = swt[(ci * KS + kh) * KS + kw];
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float xa = a[j + kw], xb = b[j + kw];
                    acc[0][j] = fmaf(wv.x, xa, acc[0][j]);
                    acc[1][j] = fmaf(wv.y, xa, acc[1][j]);
                    acc[2][j] = fmaf(wv.z, xa, acc[2][j]);
                    acc[3][j] = fmaf(wv.w, xa, acc[3][j]);
                    acc[0][4 + j] = fmaf(wv.x, xb, acc[0][4 + j]);
                    acc[1][4 + j] = fmaf(wv.y, xb, acc[1][4 + j]);
                    acc[2][4 + j] = fmaf(wv.z, xb, acc[2][4 + j]);
                    acc[3][4 + j] = fmaf(wv.w, xb, acc[3][4 + j]);
                }
            }
        }
    }

    // epilogue: z = sigmoid(((conv + cb) + bias) * scale), store, local sum
    const int oh = oh0 + ty;
    const bool rv = oh < OH;
    float lsum = 0.f;
#pragma unroll
    for (int co = 0; co < 4; ++co) {
        const int c = g * 4 + co;
        const float cbv = cb[c], bv = bias[c], sv = scale[c];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int col = ow0 + ((j < 4) ? (4 * tx + j) : (32 + 4 * tx + (j - 4)));
            const float tt = ((acc[co][j] + cbv) + bv) * sv;
            const float z = 1.f / (1.f + expf(-tt));
            acc[co][j] = z;
            if (rv && col < OW) lsum += z;
        }
        if (rv) {
            float* orow = out + ((long long)(n * Cout + c) * OH + oh) * OW;
            if (vec2) {
#pragma unroll
                for (int j = 0; j < 8; j += 2) {
                    const int col = ow0 + ((j < 4) ? (4 * tx + j) : (32 + 4 * tx + (j - 4)));
                    if (col < OW)
                        *reinterpret_cast<float2*>(orow + col) = make_float2(acc[co][j], acc[co][j + 1]);
                }
            } else {
#pragma unroll
                for (int j = 0; j < 8; ++j) {
                    const int col = ow0 + ((j < 4) ? (4 * tx + j) : (32 + 4 * tx + (j - 4)));
                    if (col < OW) orow[col] = acc[co][j];
                }
            }
        }
    }

    // exact two-pass tile statistics
    const float tot = block_sum8(lsum, red1);
    const int vr = min(TH, OH - oh0), vc = min(TW, OW - ow0);
    const float cnt = 4.f * (float)(vr * vc);
    const float mb = tot / cnt;
    float lq = 0.f;
    if (rv) {
#pragma unroll
        for (int co = 0; co < 4; ++co)
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int col = ow0 + ((j < 4) ? (4 * tx + j) : (32 + 4 * tx + (j - 4)));
                if (col < OW) { const float d = acc[co][j] - mb; lq = fmaf(d, d, lq); }
            }
    }
    const float m2 = block_sum8(lq, red2);
    if (t == 0)
        part[((long long)n * G + g) * gridDim.x + tile] = make_float4(cnt, mb, m2, 0.f);
}
"""

# ---------------------------------------------------------------------------
# Generic kernels: sigmoid+stats over a library conv output (odd configs), and the
# GroupNorm apply pass shared by both paths.
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

// y: conv output [N, C, HW] (in place -> sigmoid((y + bias) * scale)); chunk <= 4096
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

// in-place GroupNorm: y = (z - mean) * (rstd * gamma[c]) + beta[c]
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
    if (vec) {   // len % 4 == 0 and HW % 4 == 0: a float4 never straddles channels
        for (long long e = start + 4 * (long long)threadIdx.x; e < end; e += 1024) {
            const int c = g * CPG + (int)(e / HW);
            const float a = rstd * gamma[c], b = beta[c];
            float4 v = *reinterpret_cast<float4*>(slab + e);
            v.x = fmaf(v.x - mean, a, b);
            v.y = fmaf(v.y - mean, a, b);
            v.z = fmaf(v.z - mean, a, b);
            v.w = fmaf(v.w - mean, a, b);
            *reinterpret_cast<float4*>(slab + e) = v;
        }
    } else {
        for (long long e = start + threadIdx.x; e < end; e += 256) {
            const int c = g * CPG + (int)(e / HW);
            slab[e] = fmaf(slab[e] - mean, rstd * gamma[c], beta[c]);
        }
    }
}
"""

_gen = cuda.compile(GEN_SRC)
_fast_cache = {}


def _fast_mod(cin, ks):
    key = (cin, ks)
    if key not in _fast_cache:
        try:
            _fast_cache[key] = cuda.compile(CONV_SRC, options=["-DCIN=%d" % cin, "-DKS=%d" % ks])
        except Exception:
            _fast_cache[key] = None
    return _fast_cache[key]


_fast_mod(8, 3)  # default configuration, built at import

_CHUNK = 4096


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups, bias_shape, scale_shape):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        x = x.contiguous()
        conv = self.conv
        wt = conv.weight.detach().contiguous()
        Cout, Cin, KH, KW = wt.shape
        cb = conv.bias.detach().contiguous() if conv.bias is not None else torch.zeros(
            Cout, device=x.device, dtype=torch.float32)
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
        mod = None
        if (simple_conv and CPG == 4 and W % 4 == 0 and OH > 0 and OW > 0 and 0 < N <= 65535
                and G <= 65535 and x.data_ptr() % 16 == 0):
            nv4 = (KS + 6) // 4
            sw = 60 + 4 * nv4
            smem = Cin * (32 + KS - 1) * sw * 4 + Cin * KS * KS * 16
            if smem <= 200 * 1024:
                mod = _fast_mod(Cin, KS)

        if mod is not None:
            out = torch.empty((N, Cout, OH, OW), device=x.device, dtype=torch.float32)
            tilesW = (OW + 63) // 64
            tilesH = (OH + 31) // 32
            P = tilesW * tilesH
            part = torch.empty((N * G * P, 4), device=x.device, dtype=torch.float32)
            vec2 = 1 if OW % 2 == 0 else 0
            mod.conv_sig_stats(grid=(P, G, N), block=(256,), shared_mem=smem,
                               args=(x, wt, cb, bias, scale, out, part, H, W, OH, OW, G, tilesW, vec2))
        else:
            # library convolution (allowed); everything after it in our kernels
            out = F.conv2d(x, wt, cb, conv.stride, conv.padding, conv.dilation, conv.groups).contiguous()
            N, Cout, OH, OW = out.shape
            HWg = OH * OW
            L = CPG * HWg
            P = (L + _CHUNK - 1) // _CHUNK
            part = torch.empty((N * G * P, 4), device=x.device, dtype=torch.float32)
            _gen.sig_stats(grid=(P, N * G), block=(256,),
                           args=(out, bias, scale, part, CPG, HWg, G, _CHUNK))

        HW = OH * OW
        L = CPG * HW
        vec = 1 if (L % 4 == 0 and HW % 4 == 0 and out.data_ptr() % 16 == 0) else 0
        nblk = (L + _CHUNK - 1) // _CHUNK
        _gen.gn_apply(grid=(nblk, N * G), block=(256,),
                      args=(out, part, gamma, beta, P, CPG, HW, G, eps, _CHUNK, vec))
        return out
