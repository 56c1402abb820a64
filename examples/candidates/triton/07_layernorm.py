import torch
import torch.nn as nn
import triton
import triton.language as tl


# One program per row, the whole row in registers (BLOCK >= D): mean, variance around the mean,
# then normalise with the learned scale and shift.
@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, D, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < D
    x = tl.load(x_ptr + row * D + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / D
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / D
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + row * D + offs, d * rstd * w + b, mask=mask)


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
        BLOCK = triton.next_power_of_2(D)
        layernorm_kernel[(x.numel() // D,)](x, self.ln.weight, self.ln.bias, out, D, self.eps, BLOCK=BLOCK,
                                            num_warps=4 if BLOCK <= 1024 else 8)
        return out
