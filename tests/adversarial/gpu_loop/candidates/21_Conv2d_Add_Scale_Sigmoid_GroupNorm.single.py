import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

# Conv2d(8->32, k=3) + bias + scale + sigmoid + GroupNorm(8 groups), two kernels:
#  K1: direct FP32 conv (64x8 output tile x 32 oc per 256-thread block; input tile + transposed
#      weights in smem, weights read as float4 broadcasts, 64 register accumulators/thread),
#      fused (+conv_bias+bias)*scale -> sigmoid, single store of the activation, and per-(n,group)
#      sum / sum-of-squares accumulated in double (block reduction + double atomics).
#  K2: in-place GroupNorm apply (float4, evict-first), planes visited in reverse order so the
#      tail that K1 just wrote is still in L2.
# HBM traffic ~ read x once + write act + read act + write out (vs ~10 passes in eager PyTorch).

src = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

#define CA_IC 8
#define CA_OC 32
#define CA_G 8
#define CA_TW 64
#define CA_TH 8
#define CA_PX 4
#define CA_OCT 16
#define CA_INW 66
#define CA_INH 10
#define CA_INS 80

__global__ void __launch_bounds__(256, 2)
conv_add_scale_sig_stats_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                const float* __restrict__ cbias, const float* __restrict__ bias,
                                const float* __restrict__ scale, float* __restrict__ out,
                                double* __restrict__ stats, int H, int W, int OH, int OW) {
    __shared__ float in_s[CA_IC * CA_INH * CA_INS];
    __shared__ __align__(16) float w_s[CA_IC * 9 * CA_OC];
    __shared__ float cb_s[CA_OC];
    __shared__ float sc_s[CA_OC];
    __shared__ double red_s[8][4];
    __shared__ double red_ss[8][4];

    const int tid = threadIdx.x;
    const int n = blockIdx.z;
    const int oy0 = blockIdx.y * CA_TH;
    const int ox0 = blockIdx.x * CA_TW;

    // weights: global [oc][ic][kh][kw] -> smem [k = ic*9+kh*3+kw][oc]
    for (int i = tid; i < CA_IC * 9 * CA_OC; i += 256) {
        const int oc = i & (CA_OC - 1);
        const int k = i >> 5;
        w_s[i] = __ldg(w + oc * (CA_IC * 9) + k);
    }
    if (tid < CA_OC) {
        cb_s[tid] = __ldg(cbias + tid) + __ldg(bias + tid);
        sc_s[tid] = __ldg(scale + tid);
    }
    // input tile (8 x 10 x 66), zero outside the image (only feeds discarded outputs)
    const float* xn = x + (long long)n * CA_IC * H * W;
    for (int i = tid; i < CA_IC * CA_INH * CA_INW; i += 256) {
        const int ic = i / (CA_INH * CA_INW);
        const int rem = i - ic * (CA_INH * CA_INW);
        const int r = rem / CA_INW;
        const int c = rem - r * CA_INW;
        const int gy = oy0 + r, gx = ox0 + c;
        float v = 0.f;
        if (gy < H && gx < W) v = __ldg(xn + ((long long)ic * H + gy) * W + gx);
        in_s[(ic * CA_INH + r) * CA_INS + c] = v;
    }
    __syncthreads();

    const int tx = tid & 15;          // pixel lane: pixels tx + 16*p
    const int ty = (tid >> 4) & 7;    // output row in tile
    const int og = tid >> 7;          // output-channel half (warp-uniform)

    float acc[CA_OCT][CA_PX];
    #pragma unroll
    for (int j = 0; j < CA_OCT; ++j)
        #pragma unroll
        for (int p = 0; p < CA_PX; ++p) acc[j][p] = 0.f;

    #pragma unroll 1
    for (int ic = 0; ic < CA_IC; ++ic) {
        #pragma unroll
        for (int kh = 0; kh < 3; ++kh) {
            const float* row = in_s + (ic * CA_INH + ty + kh) * CA_INS + tx;
            float v[CA_PX][3];
            #pragma unroll
            for (int p = 0; p < CA_PX; ++p)
                #pragma unroll
                for (int kw = 0; kw < 3; ++kw) v[p][kw] = row[p * 16 + kw];
            #pragma unroll
            for (int kw = 0; kw < 3; ++kw) {
                const float4* wp = reinterpret_cast<const float4*>(
                    w_s + ((ic * 3 + kh) * 3 + kw) * CA_OC + og * CA_OCT);
                #pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const float4 wv = wp[q];
                    #pragma unroll
                    for (int p = 0; p < CA_PX; ++p) {
                        const float xv = v[p][kw];
                        acc[q * 4 + 0][p] = fmaf(wv.x, xv, acc[q * 4 + 0][p]);
                        acc[q * 4 + 1][p] = fmaf(wv.y, xv, acc[q * 4 + 1][p]);
                        acc[q * 4 + 2][p] = fmaf(wv.z, xv, acc[q * 4 + 2][p]);
                        acc[q * 4 + 3][p] = fmaf(wv.w, xv, acc[q * 4 + 3][p]);
                    }
                }
            }
        }
    }

    // epilogue: (+bias)*scale -> sigmoid -> store; group partial stats
    const int oy = oy0 + ty;
    const bool rowok = oy < OH;
    double gs[4] = {0.0, 0.0, 0.0, 0.0};
    double gss[4] = {0.0, 0.0, 0.0, 0.0};
    float* outn = out + (long long)n * CA_OC * OH * OW;
    #pragma unroll
    for (int j = 0; j < CA_OCT; ++j) {
        const int oc = og * CA_OCT + j;
        const float cb = cb_s[oc];
        const float sc = sc_s[oc];
        float ls = 0.f, lss = 0.f;
        float* orow = outn + ((long long)oc * OH + oy) * OW + ox0 + tx;
        #pragma unroll
        for (int p = 0; p < CA_PX; ++p) {
            const float pre = (acc[j][p] + cb) * sc;
            const float s = __fdividef(1.0f, 1.0f + __expf(-pre));
            if (rowok && (ox0 + tx + p * 16) < OW) {
                orow[p * 16] = s;
                ls += s;
                lss = fmaf(s, s, lss);
            }
        }
        gs[j >> 2] += (double)ls;
        gss[j >> 2] += (double)lss;
    }

    const int lane = tid & 31, warp = tid >> 5;
    #pragma unroll
    for (int g = 0; g < 4; ++g) {
        double a = gs[g], b = gss[g];
        #pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            a += __shfl_xor_sync(0xffffffffu, a, o);
            b += __shfl_xor_sync(0xffffffffu, b, o);
        }
        if (lane == 0) { red_s[warp][g] = a; red_ss[warp][g] = b; }
    }
    __syncthreads();
    if (tid < CA_G) {
        const int g = tid;
        const int ogg = g >> 2;
        const int lg = g & 3;
        double a = 0.0, b = 0.0;
        #pragma unroll
        for (int w4 = 0; w4 < 4; ++w4) { a += red_s[ogg * 4 + w4][lg]; b += red_ss[ogg * 4 + w4][lg]; }
        atomicAdd(&stats[((long long)n * CA_G + g) * 2 + 0], a);
        atomicAdd(&stats[((long long)n * CA_G + g) * 2 + 1], b);
    }
}

__global__ void __launch_bounds__(256)
gn_apply_kernel(float* __restrict__ y, const double* __restrict__ stats,
                const float* __restrict__ gamma, const float* __restrict__ beta,
                int C, int G, long long HW, double inv_cnt, float eps, int planes) {
    const int plane = planes - 1 - (int)blockIdx.y;
    const int n = plane / C;
    const int c = plane - n * C;
    const int g = c / (C / G);
    const double S = stats[((long long)n * G + g) * 2 + 0];
    const double SS = stats[((long long)n * G + g) * 2 + 1];
    const double mean_d = S * inv_cnt;
    double var = SS * inv_cnt - mean_d * mean_d;
    if (var < 0.0) var = 0.0;
    const float rstd = rsqrtf((float)var + eps);
    const float a = rstd * __ldg(gamma + c);
    const float b = __ldg(beta + c);
    const float mean = (float)mean_d;
    float* base = y + (long long)plane * HW;
    const int tid = threadIdx.x;
    if ((HW & 3) == 0) {
        float4* p4 = reinterpret_cast<float4*>(base);
        const long long n4 = HW >> 2;
        const long long start = (long long)blockIdx.x * 1024;
        float4 v[4];
        #pragma unroll
        for (int k = 0; k < 4; ++k) {
            const long long i = start + k * 256 + tid;
            if (i < n4) v[k] = __ldcs(p4 + i);
        }
        #pragma unroll
        for (int k = 0; k < 4; ++k) {
            const long long i = start + k * 256 + tid;
            if (i < n4) {
                float4 o;
                o.x = fmaf(v[k].x - mean, a, b);
                o.y = fmaf(v[k].y - mean, a, b);
                o.z = fmaf(v[k].z - mean, a, b);
                o.w = fmaf(v[k].w - mean, a, b);
                __stcs(p4 + i, o);
            }
        }
    } else {
        const long long start = (long long)blockIdx.x * 4096;
        for (int k = 0; k < 16; ++k) {
            const long long i = start + k * 256 + tid;
            if (i < HW) base[i] = fmaf(base[i] - mean, a, b);
        }
    }
}

torch::Tensor fused_forward(torch::Tensor x, torch::Tensor conv_w, torch::Tensor conv_b,
                            torch::Tensor bias, torch::Tensor scale,
                            torch::Tensor gn_w, torch::Tensor gn_b, int64_t groups, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "bad x");
    TORCH_CHECK(x.size(1) == CA_IC && conv_w.size(0) == CA_OC && conv_w.size(1) == CA_IC &&
                conv_w.size(2) == 3 && conv_w.size(3) == 3 && groups == CA_G, "unsupported config");
    x = x.contiguous();
    conv_w = conv_w.contiguous();
    const int64_t N = x.size(0);
    const int H = (int)x.size(2), W = (int)x.size(3);
    const int OH = H - 2, OW = W - 2;
    TORCH_CHECK(OH > 0 && OW > 0 && N <= 65535, "bad spatial/batch size");
    auto out = torch::empty({N, (int64_t)CA_OC, (int64_t)OH, (int64_t)OW}, x.options());
    auto stats = torch::zeros({N * CA_G * 2}, x.options().dtype(torch::kFloat64));
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();

    dim3 grid1((OW + CA_TW - 1) / CA_TW, (OH + CA_TH - 1) / CA_TH, (unsigned)N);
    conv_add_scale_sig_stats_kernel<<<grid1, 256, 0, stream>>>(
        x.data_ptr<float>(), conv_w.data_ptr<float>(), conv_b.data_ptr<float>(),
        bias.data_ptr<float>(), scale.data_ptr<float>(), out.data_ptr<float>(),
        stats.data_ptr<double>(), H, W, OH, OW);
    C10_CUDA_KERNEL_LAUNCH_CHECK();

    const long long HW = (long long)OH * OW;
    const int planes = (int)(N * CA_OC);
    TORCH_CHECK(planes <= 65535, "too many planes");
    unsigned gx;
    if ((HW & 3) == 0) gx = (unsigned)(((HW >> 2) + 1023) / 1024);
    else gx = (unsigned)((HW + 4095) / 4096);
    dim3 grid2(gx, (unsigned)planes, 1);
    const double cnt = (double)(CA_OC / CA_G) * (double)HW;
    gn_apply_kernel<<<grid2, 256, 0, stream>>>(
        out.data_ptr<float>(), stats.data_ptr<double>(), gn_w.data_ptr<float>(), gn_b.data_ptr<float>(),
        CA_OC, CA_G, HW, 1.0 / cnt, (float)eps, planes);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

cpp_src = ("torch::Tensor fused_forward(torch::Tensor x, torch::Tensor conv_w, torch::Tensor conv_b, "
           "torch::Tensor bias, torch::Tensor scale, torch::Tensor gn_w, torch::Tensor gn_b, "
           "int64_t groups, double eps);")

ext = load_inline(
    name="conv_add_scale_sig_gn_ext",
    cpp_sources=cpp_src,
    cuda_sources=src,
    functions=["fused_forward"],
    verbose=False,
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    """
    Conv2d + bias + scale + sigmoid + GroupNorm with fused custom CUDA kernels.
    """
    def __init__(self, in_channels, out_channels, kernel_size, num_groups, bias_shape, scale_shape):
        super(ModelNew, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.group_norm = nn.GroupNorm(num_groups, out_channels)
        self.ext = ext

    def _reference(self, x):
        x = self.conv(x)
        x = x + self.bias
        x = x * self.scale
        x = torch.sigmoid(x)
        return self.group_norm(x)

    def forward(self, x):
        conv = self.conv
        gn = self.group_norm
        ok = (x.is_cuda and x.dtype == torch.float32 and x.dim() == 4
              and conv.in_channels == 8 and conv.out_channels == 32
              and tuple(conv.kernel_size) == (3, 3) and tuple(conv.stride) == (1, 1)
              and tuple(conv.dilation) == (1, 1) and conv.groups == 1
              and conv.padding_mode == "zeros" and not isinstance(conv.padding, str)
              and tuple(conv.padding) == (0, 0)
              and gn.num_groups == 8 and gn.affine
              and self.bias.numel() == 32 and self.scale.numel() == 32
              and x.shape[1] == 8 and x.shape[2] > 2 and x.shape[3] > 2
              and x.shape[0] * 32 <= 65535)
        if not ok:
            return self._reference(x)
        with torch.no_grad():
            cb = conv.bias if conv.bias is not None else torch.zeros(32, device=x.device, dtype=x.dtype)
            return self.ext.fused_forward(
                x, conv.weight.detach().float().contiguous(), cb.detach().float().contiguous(),
                self.bias.detach().reshape(-1).float().contiguous(),
                self.scale.detach().reshape(-1).float().contiguous(),
                gn.weight.detach().float().contiguous(), gn.bias.detach().float().contiguous(),
                8, float(gn.eps))
