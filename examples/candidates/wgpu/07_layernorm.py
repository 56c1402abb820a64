import torch
import torch.nn as nn

from kforge_worker import wgsl

# One invocation per row, three passes over it in vec4 steps: the mean, the variance around it (two
# passes: no cancellation from E[x^2] - E[x]^2), then the normalised, scaled and shifted values.
# Rows are independent, so there are no barriers. Needs the row length % 4 == 0.
SRC = """
override rows: u32;
override cols4: u32;
override eps: f32;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> gamma: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> beta: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> y: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x + gid.y * 65535u * 64u;
    if (r >= rows) {
        return;
    }
    let base = r * cols4;
    let n = f32(cols4 * 4u);
    var s = vec4<f32>(0.0);
    for (var c = 0u; c < cols4; c++) {
        s += x[base + c];
    }
    let mean = (s.x + s.y + s.z + s.w) / n;
    var v = vec4<f32>(0.0);
    for (var c = 0u; c < cols4; c++) {
        let d = x[base + c] - mean;
        v += d * d;
    }
    let rstd = inverseSqrt((v.x + v.y + v.z + v.w) / n + eps);
    for (var c = 0u; c < cols4; c++) {
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
        if cols % 4:
            raise ValueError("this kernel needs the normalised size to be a multiple of 4")
        rows = x.numel() // cols
        out = torch.empty_like(x)
        groups = -(-rows // 64)
        _kern.launch((min(groups, 65535), -(-groups // 65535)), x, self.ln.weight, self.ln.bias, out,
                     rows=rows, cols4=cols // 4, eps=self.ln.eps)
        return out
