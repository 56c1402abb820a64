import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Sum over a middle dimension of a (outer, R, inner) view (here 128 x 4096 x 4095).
# Pure HBM-read-bound: each 1024-thread block owns 256 consecutive inner columns of one
# outer slice; 4 row-groups of 256 threads each stream a quarter of the R rows with 16
# independent coalesced (evict-first) loads in flight per thread, then combine via smem.
# One read of the input, one tiny write, single kernel launch.

sum_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#define SR_COLS 256
#define SR_GROUPS 4
#define SR_U 16

__global__ void __launch_bounds__(SR_COLS * SR_GROUPS, 1)
sum_mid_kernel(const float* __restrict__ x, float* __restrict__ y,
               int R, int inner, int colBlocks) {
    const int tid = threadIdx.x;
    const int c = tid % SR_COLS;
    const int g = tid / SR_COLS;
    const long long ob = blockIdx.x / colBlocks;
    const int cb = blockIdx.x % colBlocks;
    const int k = cb * SR_COLS + c;

    const int rpg = (R + SR_GROUPS - 1) / SR_GROUPS;
    const int r0 = g * rpg;
    int r1 = r0 + rpg;
    if (r1 > R) r1 = R;

    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    if (k < inner && r0 < r1) {
        const long long ld = (long long)inner;
        const float* p = x + (ob * (long long)R + r0) * ld + k;
        int r = r0;
        for (; r + SR_U <= r1; r += SR_U) {
            float v[SR_U];
            #pragma unroll
            for (int u = 0; u < SR_U; ++u) v[u] = __ldcs(p + (long long)u * ld);
            #pragma unroll
            for (int u = 0; u < SR_U; ++u) acc[u & 3] += v[u];
            p += (long long)SR_U * ld;
        }
        for (; r < r1; ++r) { acc[0] += __ldcs(p); p += ld; }
    }

    __shared__ float sh[SR_GROUPS][SR_COLS];
    sh[g][c] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    __syncthreads();
    if (g == 0 && k < inner) {
        float t = sh[0][c];
        #pragma unroll
        for (int j = 1; j < SR_GROUPS; ++j) t += sh[j][c];
        y[ob * (long long)inner + k] = t;
    }
}

torch::Tensor sum_mid_cuda(torch::Tensor x, int64_t outer, int64_t R, int64_t inner) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be CUDA float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    TORCH_CHECK(R < (1LL << 31) && inner < (1LL << 31), "dims too large");
    auto y = torch::empty({outer, 1, inner}, x.options());
    if (outer == 0 || inner == 0) return y;
    if (R == 0) { y.zero_(); return y; }
    const int colBlocks = (int)((inner + SR_COLS - 1) / SR_COLS);
    const long long grid = (long long)outer * colBlocks;
    TORCH_CHECK(grid < (1LL << 31), "grid too large");
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    sum_mid_kernel<<<(unsigned)grid, SR_COLS * SR_GROUPS, 0, stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), (int)R, (int)inner, colBlocks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

sum_cpp_source = "torch::Tensor sum_mid_cuda(torch::Tensor x, int64_t outer, int64_t R, int64_t inner);"

sum_ext = load_inline(
    name="sum_mid_dim_ext",
    cpp_sources=sum_cpp_source,
    cuda_sources=sum_source,
    functions=["sum_mid_cuda"],
    verbose=False,
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    """
    Sum reduction over a specified dimension (keepdim=True) with a custom CUDA kernel.
    """
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim
        self.ext = sum_ext

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (not x.is_cuda) or x.dtype != torch.float32 or x.dim() == 0:
            return torch.sum(x, dim=self.dim, keepdim=True)
        d = self.dim if self.dim >= 0 else self.dim + x.dim()
        shape = list(x.shape)
        outer = 1
        for s in shape[:d]:
            outer *= s
        R = shape[d]
        inner = 1
        for s in shape[d + 1:]:
            inner *= s
        if inner < 32:
            return torch.sum(x, dim=self.dim, keepdim=True)
        x = x.contiguous()
        y = self.ext.sum_mid_cuda(x, outer, R, inner)
        out_shape = shape[:d] + [1] + shape[d + 1:]
        return y.view(out_shape)
