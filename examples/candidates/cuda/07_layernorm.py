import torch
import torch.nn as nn

from kforge_kernels import cuda

# One block per row: the mean, then the variance around it (two passes, no cancellation), then
# normalise with the learned scale and shift. Re-reads of the row hit L1/L2.
SRC = r"""
#define NT 256
__device__ float block_sum(float v, float* sh) {
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < NT / 32 ? sh[lane] : 0.f;
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

extern "C" __global__ void __launch_bounds__(NT) layernorm(const float* __restrict__ x, const float* __restrict__ w,
                                                           const float* __restrict__ b, float* __restrict__ y,
                                                           int D, float eps) {
    __shared__ float sh[NT / 32];
    const float* xr = x + (long long)blockIdx.x * D;
    float* yr = y + (long long)blockIdx.x * D;
    float s = 0.f;
    for (int i = threadIdx.x; i < D; i += NT) s += xr[i];
    const float mean = block_sum(s, sh) / D;
    float q = 0.f;
    for (int i = threadIdx.x; i < D; i += NT) { float d = xr[i] - mean; q += d * d; }
    const float rstd = rsqrtf(block_sum(q, sh) / D + eps);
    for (int i = threadIdx.x; i < D; i += NT) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
}
"""
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int):
        super().__init__()
        # Same parameter names as the reference's nn.LayerNorm (ln.weight, ln.bias), without its forward.
        self.ln = nn.Module()
        self.ln.weight = nn.Parameter(torch.ones(normalized_shape))
        self.ln.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = 1e-5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        D = x.shape[-1]
        out = torch.empty_like(x)
        _mod.layernorm(grid=x.numel() // D, block=256,
                       args=(x, self.ln.weight.detach().contiguous(), self.ln.bias.detach().contiguous(), out, D,
                             self.eps))
        return out
