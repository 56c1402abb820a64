import torch
import torch.nn as nn

from kforge_kernels import native

# Direct convolution (stride 1, zero padding) + bias. One task per (image, output channel); each output
# row accumulates contiguous input rows so the ow loop vectorises. Padding is handled by clipping the
# row and column ranges each kernel tap touches instead of testing every element.
SRC = r"""
#include <cstdint>
extern "C" void conv2d(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                       float* __restrict__ y, int64_t N, int64_t C, int64_t H, int64_t W,
                       int64_t OC, int64_t KH, int64_t KW, int64_t PH, int64_t PW) {
    const int64_t OH = H + 2 * PH - KH + 1, OW = W + 2 * PW - KW + 1;
    #pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < N * OC; ++t) {
        const int64_t n = t / OC, oc = t % OC;
        float acc[1024];
        for (int64_t oh = 0; oh < OH; ++oh) {
            for (int64_t ow = 0; ow < OW; ++ow) acc[ow] = bias[oc];
            for (int64_t c = 0; c < C; ++c)
                for (int64_t kh = 0; kh < KH; ++kh) {
                    const int64_t ih = oh + kh - PH;
                    if (ih < 0 || ih >= H) continue;
                    const float* xr = x + ((n * C + c) * H + ih) * W;
                    const float* wr = w + ((oc * C + c) * KH + kh) * KW;
                    for (int64_t kw = 0; kw < KW; ++kw) {
                        const float wv = wr[kw];
                        const int64_t shift = kw - PW;  // input column = ow + shift
                        const int64_t lo = shift < 0 ? -shift : 0;
                        const int64_t hi = W - shift < OW ? W - shift : OW;
                        #pragma omp simd
                        for (int64_t ow = lo; ow < hi; ++ow) acc[ow] += wv * xr[ow + shift];
                    }
                }
            float* yr = y + ((n * OC + oc) * OH + oh) * OW;
            #pragma omp simd
            for (int64_t ow = 0; ow < OW; ++ow) yr[ow] = acc[ow];
        }
    }
}
"""
_lib = native.load(SRC, {"conv2d": [native.PTR] * 4 + [native.I64] * 9}, name="conv2d")


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w = self.conv.weight.detach().contiguous()
        b = self.conv.bias.detach().contiguous()
        N, C, H, W = x.shape
        OC, _, KH, KW = w.shape
        PH, PW = self.conv.padding
        OH, OW = H + 2 * PH - KH + 1, W + 2 * PW - KW + 1
        if OW > 1024:
            raise ValueError("output rows wider than 1024 are not supported")
        y = torch.empty(N, OC, OH, OW)
        _lib.conv2d(native.ptr(x), native.ptr(w), native.ptr(b), native.ptr(y), N, C, H, W, OC, KH, KW, PH, PW)
        return y
