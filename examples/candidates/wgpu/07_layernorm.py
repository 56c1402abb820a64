import torch
import torch.nn as nn

from kforge_kernels import wgsl

# One invocation per row, three passes over it: the mean, the variance around it (two
# passes: no cancellation from E[x^2] - E[x]^2), then the normalised, scaled and shifted values.
# Rows are independent, so there are no barriers.
SRC = """
override rows: u32;
override cols: u32;
override eps: f32;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> gamma: array<f32>;
@group(0) @binding(2) var<storage, read> beta: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x + gid.y * 65535u * 64u;
    if (r >= rows) {
        return;
    }
    let base = r * cols;
    let n = f32(cols);
    var s = 0.0;
    for (var c = 0u; c < cols; c++) {
        s += x[base + c];
    }
    let mean = s / n;
    var v = 0.0;
    for (var c = 0u; c < cols; c++) {
        let d = x[base + c] - mean;
        v += d * d;
    }
    let rstd = inverseSqrt(v / n + eps);
    for (var c = 0u; c < cols; c++) {
        y[base + c] = (x[base + c] - mean) * rstd * gamma[c] + beta[c];
    }
}
"""
_kern = wgsl.build(SRC)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cols = self.ln.weight.numel()
        rows = x.numel() // cols
        out = torch.empty_like(x)
        groups = -(-rows // 64)
        _kern.launch((min(groups, 65535), -(-groups // 65535)), x, self.ln.weight, self.ln.bias, out,
                     rows=rows, cols=cols, eps=self.ln.eps)
        return out
