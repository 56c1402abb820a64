import torch
import torch.nn as nn
import triton
import triton.language as tl


# x viewed as [outer, R, inner]; each program sums BLOCK_I consecutive columns of one outer slice
# over R (coalesced loads along inner, fp32 accumulation).
@triton.jit
def sum_mid_kernel(x_ptr, y_ptr, R, inner, BLOCK_I: tl.constexpr):
    o = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    mask = cols < inner
    base = x_ptr + o * R * inner + cols
    acc = tl.zeros([BLOCK_I], dtype=tl.float32)
    for r in range(0, R):
        acc += tl.load(base + r * inner, mask=mask, other=0.0)
    tl.store(y_ptr + o * inner + cols, acc, mask=mask)


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
        BLOCK_I = min(256, triton.next_power_of_2(inner))
        sum_mid_kernel[(outer, triton.cdiv(inner, BLOCK_I))](x, out, R, inner, BLOCK_I=BLOCK_I, num_warps=4)
        return out
