import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
#define CMAX 64
#define CPW 8

// float4 path (C <= 64, HW % 4 == 0, 16-B aligned): block tile = 32 float4 positions (128 columns)
// of one batch; warp w owns channels [8w, 8w+8); each thread keeps 8 float4 in registers.
extern "C" __global__ void __launch_bounds__(256, 4)
rms_v4(const float4* __restrict__ x, float4* __restrict__ y,
       long long ntiles, long long tpb, long long HW4, int C, float eps)
{
    __shared__ float4 red[2][8][32];
    const int lane = threadIdx.x & 31;
    const int w = threadIdx.x >> 5;
    const int c0 = w * CPW;
    const float invC = 1.0f / (float)C;
    int it = 0;
    for (long long t = blockIdx.x; t < ntiles; t += gridDim.x, it ^= 1) {
        const long long b = t / tpb;
        const long long s4 = (t - b * tpb) * 32 + lane;
        const bool ok = s4 < HW4;
        const long long base = ((long long)b * C + c0) * HW4 + s4;
        float4 v[CPW];
#pragma unroll
        for (int k = 0; k < CPW; ++k) {
            if (ok && (c0 + k) < C) v[k] = __ldcs(x + base + (long long)k * HW4);
            else v[k] = make_float4(0.f, 0.f, 0.f, 0.f);
        }
        float4 p0 = make_float4(0.f, 0.f, 0.f, 0.f), p1 = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int k = 0; k < CPW; k += 2) {
            p0.x = fmaf(v[k].x, v[k].x, p0.x); p0.y = fmaf(v[k].y, v[k].y, p0.y);
            p0.z = fmaf(v[k].z, v[k].z, p0.z); p0.w = fmaf(v[k].w, v[k].w, p0.w);
            p1.x = fmaf(v[k + 1].x, v[k + 1].x, p1.x); p1.y = fmaf(v[k + 1].y, v[k + 1].y, p1.y);
            p1.z = fmaf(v[k + 1].z, v[k + 1].z, p1.z); p1.w = fmaf(v[k + 1].w, v[k + 1].w, p1.w);
        }
        red[it][w][lane] = make_float4(p0.x + p1.x, p0.y + p1.y, p0.z + p1.z, p0.w + p1.w);
        __syncthreads();
        float4 ss = red[it][0][lane];
#pragma unroll
        for (int q = 1; q < 8; ++q) {
            const float4 r = red[it][q][lane];
            ss.x += r.x; ss.y += r.y; ss.z += r.z; ss.w += r.w;
        }
        const float rx = sqrtf(ss.x * invC + eps);
        const float ry = sqrtf(ss.y * invC + eps);
        const float rz = sqrtf(ss.z * invC + eps);
        const float rw = sqrtf(ss.w * invC + eps);
#pragma unroll
        for (int k = 0; k < CPW; ++k) {
            if (ok && (c0 + k) < C)
                __stcs(y + base + (long long)k * HW4,
                       make_float4(v[k].x / rx, v[k].y / ry, v[k].z / rz, v[k].w / rw));
        }
    }
}

// Scalar fallback, C <= 64: the whole column lives in registers.
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

    const float rms = sqrtf(ss / (float)C + eps);

#pragma unroll
    for (int c = 0; c < CMAX; ++c)
        if (c < C) q[(long long)c * HW] = v[c] / rms;
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
    const float rms = sqrtf(ss / (float)C + eps);
    for (c = 0; c < C; ++c) q[(long long)c * HW] = p[(long long)c * HW] / rms;
}
"""
_mod = cuda.compile(SRC)


def _num_sms(dev):
    return torch.cuda.get_device_properties(dev).multi_processor_count


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
        eps = float(self.eps)
        if (C <= 64 and HW % 4 == 0 and x.data_ptr() % 16 == 0 and out.data_ptr() % 16 == 0):
            HW4 = HW // 4
            tpb = (HW4 + 31) // 32
            ntiles = B * tpb
            grid = max(1, min(ntiles, _num_sms(x.device) * 8))
            _mod.rms_v4(grid=(grid,), block=(256,), args=(x, out, ntiles, tpb, HW4, C, eps))
            return out
        total = B * HW
        threads = 256
        blocks = (total + threads - 1) // threads
        if C <= 64:
            _mod.rms_reg(grid=(blocks,), block=(threads,), args=(x, out, total, HW, C, eps))
        else:
            _mod.rms_2pass(grid=(blocks,), block=(threads,), args=(x, out, total, HW, C, eps))
        return out
