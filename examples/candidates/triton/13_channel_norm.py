import torch
import torch.nn as nn
import triton
import triton.language as tl


# 1. partial_stats: grid (C, S); each program sums a slice of one channel's B*HW values and their
#    squares (fp32 within a program, fp64 across programs) into a partials buffer.
# 2. finalize: one program folds a channel's S partials into scale = w * rstd, shift = b - mean * scale.
# 3. apply: y = x * scale[c] + shift[c], one program per BLOCK elements.
@triton.jit
def partial_stats_kernel(x_ptr, part_ptr, B, C, HW, S, BLOCK: tl.constexpr):
    c = tl.program_id(0).to(tl.int64)
    sidx = tl.program_id(1)
    per_channel = B * HW
    chunk = tl.cdiv(per_channel, S)
    lo = sidx * chunk
    s = tl.zeros([BLOCK], dtype=tl.float32)
    q = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, chunk, BLOCK):
        t = lo + start + tl.arange(0, BLOCK)
        mask = (t < per_channel) & (t < lo + chunk)
        b = t // HW
        i = t % HW
        v = tl.load(x_ptr + (b * C + c) * HW + i, mask=mask, other=0.0)
        s += v
        q += v * v
    tl.store(part_ptr + (c * S + sidx) * 2, tl.sum(s.to(tl.float64), axis=0))
    tl.store(part_ptr + (c * S + sidx) * 2 + 1, tl.sum(q.to(tl.float64), axis=0))


@triton.jit
def finalize_kernel(part_ptr, w_ptr, b_ptr, scale_ptr, shift_ptr, S, count, eps, BLOCK_S: tl.constexpr):
    c = tl.program_id(0)
    offs = tl.arange(0, BLOCK_S)
    mask = offs < S
    s = tl.sum(tl.load(part_ptr + (c * S + offs) * 2, mask=mask, other=0.0), axis=0)
    q = tl.sum(tl.load(part_ptr + (c * S + offs) * 2 + 1, mask=mask, other=0.0), axis=0)
    mean = s / count
    var = q / count - mean * mean
    rstd = 1.0 / tl.sqrt(var.to(tl.float32) + eps)
    scale = tl.load(w_ptr + c) * rstd
    tl.store(scale_ptr + c, scale)
    tl.store(shift_ptr + c, tl.load(b_ptr + c) - mean.to(tl.float32) * scale)


@triton.jit
def apply_kernel(x_ptr, scale_ptr, shift_ptr, y_ptr, n, C, HW, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    c = (offs // HW) % C
    x = tl.load(x_ptr + offs, mask=mask)
    y = x * tl.load(scale_ptr + c, mask=mask) + tl.load(shift_ptr + c, mask=mask)
    tl.store(y_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_channels: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_channels))
        self.bias = nn.Parameter(torch.zeros(num_channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, C, H, W = x.shape
        HW = H * W
        S = max(1, min(64, triton.cdiv(4 * 132, C)))  # about 4 programs per SM in the statistics pass
        part = torch.empty(C * S * 2, dtype=torch.float64, device=x.device)
        scale = torch.empty(C, dtype=torch.float32, device=x.device)
        shift = torch.empty_like(scale)
        out = torch.empty_like(x)
        partial_stats_kernel[(C, S)](x, part, B, C, HW, S, BLOCK=2048, num_warps=8)
        finalize_kernel[(C,)](part, self.weight, self.bias, scale, shift, S, B * HW, self.eps,
                              BLOCK_S=triton.next_power_of_2(S), num_warps=1)
        n = x.numel()
        apply_kernel[(triton.cdiv(n, 4096),)](x, scale, shift, out, n, C, HW, BLOCK=4096, num_warps=8)
        return out
