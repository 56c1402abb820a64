import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
#define CMAX 64

// C <= 64: the whole column lives in registers -> exactly one read and one write per element.
extern "C" __global__ void __launch_bounds__(256)
rms_reg(const float* __restrict__ x, float* __restrict__ y,
        long long total, long long HW, int C, float eps)
{
    const long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= total) return;
    const long long b = col / HW;
    const long long base = b * (long long)C * HW + (col - b * HW);
    const float* p = x + base;
    float* q = y + base;

    float v[CMAX];
#pragma unroll
    for (int c = 0; c < CMAX; ++c) v[c] = (c < C) ? p[(long long)c * HW] : 0.f;

    float a[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) a[k] = 0.f;
#pragma unroll
    for (int c = 0; c < CMAX; ++c) a[c & 7] = fmaf(v[c], v[c], a[c & 7]);
    const float ss = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));

    const float mean = ss / (float)C;
    const float inv = 1.0f / sqrtf(mean + eps);

#pragma unroll
    for (int c = 0; c < CMAX; ++c)
        if (c < C) q[(long long)c * HW] = v[c] * inv;
}

// Generic C > 64: two passes over the column (the second mostly from cache).
extern "C" __global__ void __launch_bounds__(256)
rms_2pass(const float* __restrict__ x, float* __restrict__ y,
          long long total, long long HW, int C, float eps)
{
    const long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= total) return;
    const long long b = col / HW;
    const long long base = b * (long long)C * HW + (col - b * HW);
    const float* p = x + base;
    float* q = y + base;
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    int c = 0;
    for (; c + 3 < C; c += 4) {
        const float v0 = p[(long long)(c + 0) * HW];
        const float v1 = p[(long long)(c + 1) * HW];
        const float v2 = p[(long long)(c + 2) * HW];
        const float v3 = p[(long long)(c + 3) * HW];
        a0 = fmaf(v0, v0, a0); a1 = fmaf(v1, v1, a1);
        a2 = fmaf(v2, v2, a2); a3 = fmaf(v3, v3, a3);
    }
    for (; c < C; ++c) { const float v0 = p[(long long)c * HW]; a0 = fmaf(v0, v0, a0); }
    const float ss = (a0 + a1) + (a2 + a3);
    const float inv = 1.0f / sqrtf(ss / (float)C + eps);
    for (c = 0; c < C; ++c) q[(long long)c * HW] = p[(long long)c * HW] * inv;
}
"""
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super(ModelNew, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        if x.numel() == 0:
            return out
        B, C = x.shape[0], x.shape[1]
        HW = x.numel() // (B * C)
        total = B * HW
        threads = 256
        blocks = (total + threads - 1) // threads
        if C <= 64:
            _mod.rms_reg(grid=(blocks,), block=(threads,), args=(x, out, total, HW, C, float(self.eps)))
        else:
            _mod.rms_2pass(grid=(blocks,), block=(threads,), args=(x, out, total, HW, C, float(self.eps)))
        return out
