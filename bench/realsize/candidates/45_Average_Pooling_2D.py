# Honest CUDA candidate for KernelBench level1 45_Average_Pooling_2D: one thread per output element
# (consecutive threads on consecutive output columns), summing its k x k window; padding 0 only.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void avgpool2d(const float* __restrict__ x, float* __restrict__ y, long long planes, int H, int W,
                          int OH, int OW, int k, int stride) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = planes * OH * OW;
    if (idx >= total) return;
    int ow = idx % OW;
    int oh = (idx / OW) % OH;
    long long plane = idx / ((long long)OH * OW);
    const float* base = x + plane * H * W + (long long)(oh * stride) * W + ow * stride;
    float acc = 0.f;
    for (int i = 0; i < k; ++i) {
        const float* row = base + (long long)i * W;
        #pragma unroll 4
        for (int j = 0; j < k; ++j) acc += __ldg(row + j);
    }
    y[idx] = acc / (float)(k * k);
}

torch::Tensor avgpool_forward(torch::Tensor x, int64_t k, int64_t stride) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 4, "expects a 4-D float32 CUDA tensor");
    x = x.contiguous();
    long long N = x.size(0), C = x.size(1);
    int H = x.size(2), W = x.size(3);
    int OH = (H - k) / stride + 1, OW = (W - k) / stride + 1;
    auto y = torch::empty({N, C, OH, OW}, x.options());
    long long total = N * C * OH * OW;
    avgpool2d<<<(total + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), N * C, H, W, OH, OW, (int)k,
                                            (int)stride);
    return y;
}
"""

cpp_source = "torch::Tensor avgpool_forward(torch::Tensor x, int64_t k, int64_t stride);"

pool_ext = load_inline(name="realsize_avgpool2d", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["avgpool_forward"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0):
        super().__init__()
        if padding != 0:
            raise ValueError("this kernel supports padding 0 only")
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return pool_ext.avgpool_forward(x, self.kernel_size, self.stride)
