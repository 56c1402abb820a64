import torch
import torch.nn as nn

from kforge_kernels import cuda

# x viewed as [outer, R, inner]; out[o, i] = sum_r x[o, r, i].
# inner > 1: one thread per (o, i), consecutive threads read consecutive i (coalesced), 4 independent
#            partial sums keep several loads in flight.
# inner == 1: one warp per row, shuffle reduction.
SRC = r"""
extern "C" __global__ void __launch_bounds__(256)
sum_mid(const float* __restrict__ x, float* __restrict__ y, long long outer, int R, long long inner) {
    long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (t >= outer * inner) return;
    long long o = t / inner, i = t % inner;
    const float* p = x + o * R * inner + i;
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    int r = 0;
    for (; r + 3 < R; r += 4) {
        a0 += p[(long long)r * inner];
        a1 += p[(long long)(r + 1) * inner];
        a2 += p[(long long)(r + 2) * inner];
        a3 += p[(long long)(r + 3) * inner];
    }
    for (; r < R; ++r) a0 += p[(long long)r * inner];
    y[t] = (a0 + a1) + (a2 + a3);
}

extern "C" __global__ void __launch_bounds__(256)
sum_last(const float* __restrict__ x, float* __restrict__ y, long long rows, int R) {
    long long row = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float* p = x + row * R;
    float acc = 0.f;
    for (int r = lane; r < R; r += 32) acc += p[r];
    for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) y[row] = acc;
}
"""
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        d = self.dim % x.dim()
        shape = list(x.shape)
        R = shape[d]
        outer = 1
        for s in shape[:d]:
            outer *= s
        inner = x.numel() // max(1, outer * R)
        shape[d] = 1
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
        if inner > 1:
            n = outer * inner
            _mod.sum_mid(grid=(n + 255) // 256, block=256, args=(x, out, outer, R, inner))
        else:
            _mod.sum_last(grid=(outer * 32 + 255) // 256, block=256, args=(x, out, outer, R))
        return out
