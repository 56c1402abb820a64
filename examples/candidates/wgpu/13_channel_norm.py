import torch
import torch.nn as nn

from kforge_worker import wgsl

# Two kernels. STATS: one invocation per channel walks its N x (H*W) values twice (mean, then the
# biased variance around it) and stores the mean and 1/sqrt(var + eps). APPLY: one invocation per 4
# values normalises, scales and shifts. Needs H*W % 4 == 0.
STATS = """
override N: u32;
override C: u32;
override HW4: u32;
override eps: f32;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> stats: array<f32>;   // (C, 2): mean, rstd

@compute @workgroup_size(8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    if (c >= C) {
        return;
    }
    let count = f32(N * HW4 * 4u);
    var s = vec4<f32>(0.0);
    for (var n = 0u; n < N; n++) {
        let base = (n * C + c) * HW4;
        for (var i = 0u; i < HW4; i++) {
            s += x[base + i];
        }
    }
    let mean = (s.x + s.y + s.z + s.w) / count;
    var v = vec4<f32>(0.0);
    for (var n = 0u; n < N; n++) {
        let base = (n * C + c) * HW4;
        for (var i = 0u; i < HW4; i++) {
            let d = x[base + i] - mean;
            v += d * d;
        }
    }
    stats[2u * c] = mean;
    stats[2u * c + 1u] = inverseSqrt((v.x + v.y + v.z + v.w) / count + eps);
}
"""

APPLY = """
override C: u32;
override HW4: u32;
override total4: u32;
override row: u32;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> stats: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * row * 256u;
    if (i >= total4) {
        return;
    }
    let c = (i / HW4) % C;
    let scale = stats[2u * c + 1u] * weight[c];
    y[i] = (x[i] - stats[2u * c]) * scale + bias[c];
}
"""
_stats = wgsl.build(STATS)
_apply = wgsl.build(APPLY)


class ModelNew(nn.Module):
    def __init__(self, num_channels: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_channels))
        self.bias = nn.Parameter(torch.zeros(num_channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, C, H, W = x.shape
        if (H * W) % 4:
            raise ValueError("this kernel needs H*W to be a multiple of 4")
        stats = torch.empty(C, 2, dtype=x.dtype)
        _stats.launch((-(-C // 8),), x, stats, N=N, C=C, HW4=H * W // 4, eps=self.eps)
        out = torch.empty_like(x)
        total4 = x.numel() // 4
        groups = -(-total4 // 256)
        row = min(groups, 65535)
        _apply.launch((row, -(-groups // row)), x, stats, self.weight, self.bias, out,
                      C=C, HW4=H * W // 4, total4=total4, row=row)
        return out
