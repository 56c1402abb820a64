import cutlass
import cutlass.cute as cute
import torch
import torch.nn as nn
from cutlass.cute.runtime import from_dlpack


# One thread per element; the host function is compiled once per element count.
@cute.kernel
def relu_kernel(gX: cute.Tensor, gY: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    bdim, _, _ = cute.arch.block_dim()
    i = bidx * bdim + tidx
    if i < n:
        v = gX[i]
        if v > cutlass.Float32(0.0):
            gY[i] = v
        else:
            gY[i] = cutlass.Float32(0.0)


@cute.jit
def relu(mX: cute.Tensor, mY: cute.Tensor, n: cutlass.Int32):
    threads = 256
    relu_kernel(mX, mY, n).launch(grid=[cute.ceil_div(n, threads), 1, 1], block=[threads, 1, 1])


_compiled = {}


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().view(-1)
        out = torch.empty_like(flat)
        args = (from_dlpack(flat), from_dlpack(out), flat.numel())
        if flat.numel() not in _compiled:
            _compiled[flat.numel()] = cute.compile(relu, *args)
        _compiled[flat.numel()](*args)
        return out.view_as(x)
