import torch
import torch.nn as nn

from kforge_kernels import wgsl

# A WGSL compute shader built once per process. Tensors are bound in argument order (binding 0, 1, ...);
# sizes and scalars are `override` constants passed by keyword. One invocation per element, any size.
SRC = """
override cols: u32;      // features
override total: u32;     // elements
override scale: f32;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> bias: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 65535u * 256u;
    if (i < total) {
        y[i] = max(x[i] * scale + bias[i % cols], 0.0);
    }
}
"""
_kern = wgsl.build(SRC)


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features) * 0.1)  # same name and shape as the reference
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        groups = -(-x.numel() // 256)  # at most 65535 workgroups per grid dimension
        _kern.launch((min(groups, 65535), -(-groups // 65535)), x, self.bias, out,
                     cols=self.bias.numel(), total=x.numel(), scale=self.scale)
        return out
