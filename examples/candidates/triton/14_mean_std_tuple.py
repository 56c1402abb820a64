import torch
import torch.nn as nn
import triton
import triton.language as tl


# One program per row, the whole row in registers: mean, then the unbiased standard deviation from
# squared deviations around it (no cancellation). Both outputs from one launch.
@triton.jit
def mean_std_kernel(x_ptr, mean_ptr, std_ptr, D, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < D
    x = tl.load(x_ptr + row * D + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / D
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / (D - 1)
    tl.store(mean_ptr + row, mean)
    tl.store(std_ptr + row, tl.sqrt(var))


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor):
        x = x.contiguous()
        D = x.shape[-1]
        mean = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)
        std = torch.empty_like(mean)
        BLOCK = triton.next_power_of_2(D)
        mean_std_kernel[(x.numel() // D,)](x, mean, std, D, BLOCK=BLOCK, num_warps=4 if BLOCK <= 2048 else 8)
        return mean, std
