import torch
import torch.nn as nn

from kforge_worker import wgsl

# A shader that builds and runs but computes the wrong thing (ReLU with the comparison reversed).
_kern = wgsl.build("""
override n: u32;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 65535u * 64u;
    if (i < n) {
        y[i] = min(x[i], 0.0);
    }
}
""")


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        groups = -(-x.numel() // 64)
        _kern.launch((min(groups, 65535), -(-groups // 65535)), x, out, n=x.numel())
        return out
