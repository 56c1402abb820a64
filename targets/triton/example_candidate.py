import torch
import torch.nn as nn
import triton
import triton.language as tl


# One program handles BLOCK consecutive elements; loads and stores are masked at the tail.
# Triton compiles at the first launch (about a second) and caches the result across runs.
@triton.jit
def scale_bias_relu_kernel(x_ptr, bias_ptr, y_ptr, n, cols, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(bias_ptr + offs % cols, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x * scale + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features) * 0.1)  # same name and shape as the reference
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)  # allocate on x's device: the same code runs in the interpreter
        n = x.numel()
        BLOCK = 2048
        scale_bias_relu_kernel[(triton.cdiv(n, BLOCK),)](x, self.bias, out, n, self.bias.numel(), self.scale,
                                                         BLOCK=BLOCK, num_warps=8)
        return out
