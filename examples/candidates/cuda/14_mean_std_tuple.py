import torch
import torch.nn as nn

from kforge_kernels import cuda

# One block per row: the mean, then the sum of squared deviations around it (two passes, no
# cancellation), unbiased standard deviation. Both outputs come from one launch.
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

extern "C" __global__ void __launch_bounds__(NT) mean_std(const float* __restrict__ x, float* __restrict__ mean_out,
                                                          float* __restrict__ std_out, int D) {
    __shared__ float sh[NT / 32];
    const float* xr = x + (long long)blockIdx.x * D;
    float s = 0.f;
    for (int i = threadIdx.x; i < D; i += NT) s += xr[i];
    const float mean = block_sum(s, sh) / D;
    float q = 0.f;
    for (int i = threadIdx.x; i < D; i += NT) { float d = xr[i] - mean; q += d * d; }
    q = block_sum(q, sh);
    if (threadIdx.x == 0) {
        mean_out[blockIdx.x] = mean;
        std_out[blockIdx.x] = sqrtf(q / (D - 1));
    }
}
"""
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        D = x.shape[-1]
        rows = x.numel() // D
        mean = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
        std = torch.empty_like(mean)
        _mod.mean_std(grid=rows, block=256, args=(x, mean, std, D))
        return mean, std
