import torch
import torch.nn as nn
import triton
import triton.language as tl


# relu(x @ W^T + b): W[N, K] is read as B[K, N] through its strides; bias and ReLU are applied to the
# accumulators before the single store.
@triton.jit
def gemm_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                HAS_EPILOGUE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                GROUP_M: tl.constexpr):
    # Grouped ordering of the programs: neighbouring programs share rows of A in L2.
    pid = tl.program_id(0)
    num_m, num_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GROUP_M * num_n)
    first_m = group * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_n)) % size_m
    pid_n = (pid % (GROUP_M * num_n)) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        # ieee: true fp32 products (the default, tf32, fails kforge's strict precision check).
        acc = tl.dot(a, b, acc, input_precision="ieee")
    if HAS_EPILOGUE:
        bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
        acc = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        # Same parameter names as the reference's nn.Linear (linear.weight, linear.bias), without its forward.
        self.linear = nn.Module()
        self.linear.weight = nn.Parameter(torch.randn(out_features, in_features) * in_features ** -0.5)
        self.linear.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        W = self.linear.weight.detach().contiguous()
        b = self.linear.bias.detach().contiguous()
        M, K = x.shape
        N = W.shape[0]
        y = torch.empty(M, N, dtype=x.dtype, device=x.device)
        BM, BN, BK = 128, 128, 32
        grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
        gemm_kernel[grid](x, W, b, y, M, N, K, K, 1, 1, K, HAS_EPILOGUE=True, BM=BM, BN=BN, BK=BK, GROUP_M=8,
                          num_warps=8, num_stages=3)
        return y
