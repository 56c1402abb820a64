import torch
import torch.nn as nn

from kforge_kernels import wgsl

# Exact (erf-based) GELU. WGSL has no erf: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7) is far inside
# the fp32 tolerance. One invocation per element; a 2-D grid keeps each dimension under 65535.
SRC = """
override n: u32;
override row: u32;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

fn erf1(v: f32) -> f32 {
    let a = abs(v);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    return sign(v) * (1.0 - poly * exp(-a * a));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * row * 256u;
    if (i < n) {
        let v = x[i];
        y[i] = 0.5 * v * (1.0 + erf1(v * 0.70710678118654752));
    }
}
"""
_kern = wgsl.build(SRC)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        groups = -(-n // 256)
        row = min(groups, 65535)
        _kern.launch((row, -(-groups // row)), x, out, n=n, row=row)
        return out
