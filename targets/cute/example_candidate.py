import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack


# A CuTe DSL kernel: one thread per element. @cute.kernel is the device code, @cute.jit the host code
# that launches it; cute.compile builds both once per shape (cached below).
@cute.kernel
def scale_bias_relu_kernel(gX: cute.Tensor, gB: cute.Tensor, gY: cute.Tensor, cols: cutlass.Int32,
                           n: cutlass.Int32, scale: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < n:
        v = gX[i] * scale + gB[i % cols]
        if v > cutlass.Float32(0.0):
            gY[i] = v
        else:
            gY[i] = cutlass.Float32(0.0)


@cute.jit
def scale_bias_relu(mX: cute.Tensor, mB: cute.Tensor, mY: cute.Tensor, cols: cutlass.Int32, n: cutlass.Int32,
                    scale: cutlass.Float32):
    threads = 256
    scale_bias_relu_kernel(mX, mB, mY, cols, n, scale).launch(grid=[cute.ceil_div(n, threads), 1, 1],
                                                              block=[threads, 1, 1])


_compiled = {}


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features) * 0.1)  # same name and shape as the reference
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous().view(-1)
        bias = self.bias.detach().contiguous()
        out = torch.empty_like(x)
        args = (from_dlpack(x), from_dlpack(bias), from_dlpack(out), bias.numel(), x.numel(), float(self.scale))
        key = (x.numel(), bias.numel())
        if key not in _compiled:
            _compiled[key] = cute.compile(scale_bias_relu, *args)
        _compiled[key](*args)
        return out.view(-1, bias.numel())
