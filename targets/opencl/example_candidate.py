import torch
import torch.nn as nn

from kforge_kernels import ocl

# OpenCL C built for the CPU (PoCL) once and cached. Tensors are passed zero-copy; Python scalars are
# converted to the kernel's parameter types. Each work-item handles 8 consecutive floats of a row.
SRC = """
__kernel void scale_bias_relu(__global const float* x, __global const float* bias, __global float* y,
                              int cols, float scale) {
    const int c = get_global_id(0) * 8;
    const long off = (long)get_global_id(1) * cols + c;
    const float8 v = vload8(0, x + off) * scale + vload8(0, bias + c);
    vstore8(fmax(v, (float8)(0.0f)), 0, y + off);
}
"""
_prog = ocl.build(SRC)


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features) * 0.1)  # same name and shape as the reference
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        bias = self.bias.detach().contiguous()
        cols = bias.numel()
        if cols % 8:
            raise ValueError("this kernel needs the feature count to be a multiple of 8")
        out = torch.empty_like(x)
        # global size (cols / 8, rows); local size None lets PoCL choose the work-group size.
        _prog.launch("scale_bias_relu", (cols // 8, x.numel() // cols), None, x, bias, out, cols, self.scale)
        return out
