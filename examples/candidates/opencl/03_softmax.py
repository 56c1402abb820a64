import torch
import torch.nn as nn

from kforge_worker import ocl

# One work-item per row (rows are independent; PoCL spreads work-groups over the cores). The row is
# walked with float8 vectors: max, exp-and-sum, scale. Requires cols % 8 == 0 (checked in forward).
SRC = """
__kernel void softmax_rows(__global const float* x, __global float* y, int cols) {
    const long r = get_global_id(0);
    __global const float* xr = x + r * cols;
    __global float* yr = y + r * cols;
    float8 m8 = vload8(0, xr);
    for (int c = 8; c < cols; c += 8) m8 = fmax(m8, vload8(0, xr + c));
    float4 m4 = fmax(m8.lo, m8.hi);
    float2 m2 = fmax(m4.lo, m4.hi);
    const float m = fmax(m2.lo, m2.hi);
    float8 s8 = (float8)(0.0f);
    for (int c = 0; c < cols; c += 8) {
        float8 e = exp(vload8(0, xr + c) - m);
        vstore8(e, 0, yr + c);
        s8 += e;
    }
    float4 s4 = s8.lo + s8.hi;
    float2 s2 = s4.lo + s4.hi;
    const float inv = 1.0f / (s2.lo + s2.hi);
    for (int c = 0; c < cols; c += 8) vstore8(vload8(0, yr + c) * inv, 0, yr + c);
}
"""
_prog = ocl.build(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        cols = x.shape[-1]
        if cols % 8:
            raise ValueError("this kernel needs the row length to be a multiple of 8")
        out = torch.empty_like(x)
        _prog.launch("softmax_rows", (x.numel() // cols,), (1,), x, out, cols)
        return out
