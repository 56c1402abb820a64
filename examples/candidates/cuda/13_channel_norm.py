import torch
import torch.nn as nn

from kforge_kernels import cuda

# Per-channel statistics over (batch, height, width), then an elementwise normalise.
#  1. partial_stats: grid (C, S); each block sums a slice of the channel's B*HW values and their
#     squares in double (no cancellation in E[x^2] - mean^2) and writes one partial pair.
#  2. finalize: one thread per channel folds its S partials into scale = w * rstd, shift = b - mean * scale.
#  3. apply: y = x * scale[c] + shift[c], float4 per thread.
SRC = r"""
#define NT 256
extern "C" __global__ void __launch_bounds__(NT)
partial_stats(const float* __restrict__ x, double* __restrict__ part, int B, int C, long long HW, int S) {
    __shared__ double sh_s[NT / 32], sh_q[NT / 32];
    const int c = blockIdx.x, sidx = blockIdx.y;
    const long long per_channel = (long long)B * HW;
    const long long chunk = (per_channel + S - 1) / S;
    const long long lo = sidx * chunk, hi = min(per_channel, lo + chunk);
    double s = 0.0, q = 0.0;
    for (long long t = lo + threadIdx.x; t < hi; t += NT) {
        long long b = t / HW, i = t % HW;
        float v = x[(b * C + c) * HW + i];
        s += v;
        q += (double)v * v;
    }
    for (int off = 16; off > 0; off /= 2) {
        s += __shfl_xor_sync(0xffffffffu, s, off);
        q += __shfl_xor_sync(0xffffffffu, q, off);
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { sh_s[warp] = s; sh_q[warp] = q; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < NT / 32; ++w) { s += sh_s[w]; q += sh_q[w]; }
        part[(c * S + sidx) * 2] = s;
        part[(c * S + sidx) * 2 + 1] = q;
    }
}

extern "C" __global__ void finalize(const double* __restrict__ part, const float* __restrict__ w,
                                    const float* __restrict__ b, float* __restrict__ scale,
                                    float* __restrict__ shift, int C, int S, long long count, float eps) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    double s = 0.0, q = 0.0;
    for (int i = 0; i < S; ++i) { s += part[(c * S + i) * 2]; q += part[(c * S + i) * 2 + 1]; }
    double mean = s / count, var = q / count - mean * mean;
    float rstd = (float)(1.0 / sqrt(var + eps));
    scale[c] = w[c] * rstd;
    shift[c] = b[c] - (float)mean * scale[c];
}

extern "C" __global__ void __launch_bounds__(NT)
apply(const float* __restrict__ x, const float* __restrict__ scale, const float* __restrict__ shift,
      float* __restrict__ y, long long n, int C, long long HW) {
    const long long stride = (long long)gridDim.x * NT;
    for (long long i = blockIdx.x * (long long)NT + threadIdx.x; i < n; i += stride) {
        int c = (int)((i / HW) % C);
        y[i] = x[i] * scale[c] + shift[c];
    }
}
"""
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self, num_channels: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_channels))
        self.bias = nn.Parameter(torch.zeros(num_channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, C, H, W = x.shape
        HW = H * W
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count
        S = max(1, min(64, (4 * sms + C - 1) // C))  # about 4 blocks per SM in the statistics pass
        part = torch.empty(C * S * 2, dtype=torch.float64, device=x.device)
        scale = torch.empty(C, dtype=torch.float32, device=x.device)
        shift = torch.empty_like(scale)
        out = torch.empty_like(x)
        _mod.partial_stats(grid=(C, S), block=256, args=(x, part, B, C, HW, S))
        _mod.finalize(grid=(C + 127) // 128, block=128,
                      args=(part, self.weight.detach().contiguous(), self.bias.detach().contiguous(), scale, shift,
                            C, S, B * HW, self.eps))
        n = x.numel()
        _mod.apply(grid=min((n + 255) // 256, sms * 8), block=256, args=(x, scale, shift, out, n, C, HW))
        return out
