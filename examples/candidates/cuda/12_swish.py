import torch
import torch.nn as nn

from kforge_kernels import cuda

# Swish x * sigmoid(x), memory-bound: one 16-byte load and store per thread per step (float4), grid-stride
# loop over a few waves of blocks; the last n % 4 elements go through the scalar loop.
SRC = r"""
__device__ __forceinline__ float swish1(float v) { return v / (1.f + expf(-v)); }

extern "C" __global__ void __launch_bounds__(256) swish(const float* __restrict__ x, float* __restrict__ y,
                                                       long long n) {
    const long long n4 = n / 4, stride = (long long)gridDim.x * blockDim.x;
    const long long tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (long long i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        v.x = swish1(v.x); v.y = swish1(v.y);
        v.z = swish1(v.z); v.w = swish1(v.w);
        y4[i] = v;
    }
    for (long long i = n4 * 4 + tid; i < n; i += stride) y[i] = swish1(x[i]);
}
"""
_mod = cuda.compile(SRC)


def _blocks(n: int) -> int:
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    return max(1, min((n // 4 + 255) // 256, sms * 8))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        if x.data_ptr() % 16:
            x = x.clone()  # float4 access needs 16-byte alignment
        out = torch.empty_like(x)
        n = x.numel()
        _mod.swish(grid=_blocks(n), block=256, args=(x, out, n))
        return out
