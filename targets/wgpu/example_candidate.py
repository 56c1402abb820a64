import torch
import torch.nn as nn

from kforge_worker import wgsl

# A WGSL compute shader built once per process. Tensors are bound in argument order (binding 0, 1, ...);
# sizes and scalars are `override` constants passed by keyword. One invocation per 4 floats (vec4).
SRC = """
override cols4: u32;     // features / 4
override total4: u32;    // elements / 4
override scale: f32;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> bias: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 65535u * 256u;
    if (i < total4) {
        y[i] = max(x[i] * scale + bias[i % cols4], vec4<f32>(0.0));
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
        cols = self.bias.numel()
        if cols % 4:
            raise ValueError("this kernel needs the feature count to be a multiple of 4")
        out = torch.empty_like(x)
        groups = -(-x.numel() // 4 // 256)  # at most 65535 workgroups per grid dimension
        _kern.launch((min(groups, 65535), -(-groups // 65535)), x, self.bias, out,
                     cols4=cols // 4, total4=x.numel() // 4, scale=self.scale)
        return out
