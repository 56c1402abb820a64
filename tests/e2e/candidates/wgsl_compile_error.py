import torch.nn as nn

from kforge_worker import wgsl

_kern = wgsl.build("""
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    y[gid.x] = max(x[gid.x], undeclared_zero);
}
""")


class ModelNew(nn.Module):
    def forward(self, x):
        return x
