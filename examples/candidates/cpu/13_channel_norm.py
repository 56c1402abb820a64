import torch
import torch.nn as nn

from kforge_kernels import native

# Per-channel statistics over batch and space, then scale and shift. One task per channel: a channel is N
# contiguous planes of H*W floats. Two passes around the mean (no cancellation from E[x^2] - E[x]^2),
# sums accumulated in double across planes (N*H*W terms), then one fused pass that writes the output.
SRC = r"""
#include <cmath>
#include <cstdint>
extern "C" void channel_norm(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                             float* __restrict__ y, int64_t N, int64_t C, int64_t HW, float eps) {
    #pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < C; ++c) {
        double s = 0.0;
        for (int64_t n = 0; n < N; ++n) {
            const float* p = x + (n * C + c) * HW;
            float ps = 0.0f;
            #pragma omp simd reduction(+:ps)
            for (int64_t i = 0; i < HW; ++i) ps += p[i];
            s += ps;
        }
        const double count = static_cast<double>(N * HW);
        const float mean = static_cast<float>(s / count);
        double v = 0.0;
        for (int64_t n = 0; n < N; ++n) {
            const float* p = x + (n * C + c) * HW;
            float pv = 0.0f;
            #pragma omp simd reduction(+:pv)
            for (int64_t i = 0; i < HW; ++i) { float d = p[i] - mean; pv += d * d; }
            v += pv;
        }
        const float rstd = static_cast<float>(1.0 / std::sqrt(v / count + eps));
        const float scale = rstd * w[c], shift = b[c] - mean * rstd * w[c];
        for (int64_t n = 0; n < N; ++n) {
            const float* p = x + (n * C + c) * HW;
            float* q = y + (n * C + c) * HW;
            #pragma omp simd
            for (int64_t i = 0; i < HW; ++i) q[i] = p[i] * scale + shift;
        }
    }
}
"""
_lib = native.load(SRC, {"channel_norm": [native.PTR] * 4 + [native.I64] * 3 + [native.F32]}, name="channel_norm")


class ModelNew(nn.Module):
    def __init__(self, num_channels: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_channels))
        self.bias = nn.Parameter(torch.zeros(num_channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w = self.weight.detach().contiguous()
        b = self.bias.detach().contiguous()
        N, C = x.shape[0], x.shape[1]
        HW = x.numel() // (N * C)
        y = torch.empty_like(x)
        _lib.channel_norm(native.ptr(x), native.ptr(w), native.ptr(b), native.ptr(y), N, C, HW, self.eps)
        return y
