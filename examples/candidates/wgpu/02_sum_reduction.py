import math

import torch
import torch.nn as nn

from kforge_worker import wgsl

# The input seen as (outer, R, inner) around the reduced dimension. One invocation per (outer, inner)
# output walks R; neighbouring invocations read neighbouring columns, so each step of the walk reads
# one contiguous stretch of memory.
SRC = """
override outer: u32;
override reduced: u32;
override inner: u32;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x;
    let o = gid.y;
    if (col >= inner || o >= outer) {
        return;
    }
    var acc = 0.0;
    var p = o * reduced * inner + col;
    for (var r = 0u; r < reduced; r++) {
        acc += x[p];
        p += inner;
    }
    y[o * inner + col] = acc;
}
"""
_kern = wgsl.build(SRC)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.dim % x.dim()
        outer, reduced, inner = math.prod(x.shape[:dim]), x.shape[dim], math.prod(x.shape[dim + 1:])
        if outer > 65535:
            raise ValueError("this kernel dispatches one workgroup row per outer index (at most 65535)")
        out = torch.empty(*x.shape[:dim], 1, *x.shape[dim + 1:], dtype=x.dtype)
        _kern.launch((-(-inner // 64), outer), x, out, outer=outer, reduced=reduced, inner=inner)
        return out
