import torch
import torch.nn as nn

from kforge_kernels import wgsl

# One workgroup per row: the row's maximum, then the sum of exp(x - max), each reduced across the
# workgroup in shared memory, then the normalised values written back.
SRC = """
override rows: u32;
override cols: u32;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

var<workgroup> partial: array<f32, WG>;

fn reduce_max(v: f32, lid: u32) -> f32 {
    partial[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            partial[lid] = max(partial[lid], partial[lid + s]);
        }
        workgroupBarrier();
    }
    let r = partial[0];
    workgroupBarrier();
    return r;
}

fn reduce_sum(v: f32, lid: u32) -> f32 {
    partial[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            partial[lid] = partial[lid] + partial[lid + s];
        }
        workgroupBarrier();
    }
    let r = partial[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
    let lid = lid3.x;
    let base = wid.x * cols;
    var m = -3.4028235e38;
    for (var c = lid; c < cols; c += WG) {
        m = max(m, x[base + c]);
    }
    m = reduce_max(m, lid);
    var s = 0.0;
    for (var c = lid; c < cols; c += WG) {
        s += exp(x[base + c] - m);
    }
    let inv = 1.0 / reduce_sum(s, lid);
    for (var c = lid; c < cols; c += WG) {
        y[base + c] = exp(x[base + c] - m) * inv;
    }
}
"""
_kern = wgsl.build(SRC)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        cols = x.shape[-1]
        rows = x.numel() // cols
        if rows > 65535:
            raise ValueError("this kernel dispatches one workgroup per row (at most 65535)")
        _kern.launch((rows,), x, out, rows=rows, cols=cols)
        return out
