import torch
import torch.nn as nn

from kforge_kernels import wgsl

# y = relu(x @ W^T + b) in one kernel. Each invocation computes a 4x4 block of y: rows of x and rows of
# W are both contiguous along K, so every step loads four values of x and four of W for 16
# multiply-adds. No workgroup memory or barriers (costly on lavapipe, the CPU Vulkan driver).
SRC = """
override M: u32;
override K: u32;
override N: u32;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;     // (N, K), nn.Linear's layout
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n0 = gid.x * 4u;
    let m0 = gid.y * 4u;
    if (n0 >= N || m0 >= M) {
        return;
    }
    var acc: array<array<f32, 4>, 4>;
    var xr: array<u32, 4>;
    var wr: array<u32, 4>;
    for (var i = 0u; i < 4u; i++) {
        xr[i] = min(m0 + i, M - 1u) * K;   // rows past the edge are clamped here and skipped when storing
        wr[i] = min(n0 + i, N - 1u) * K;
    }
    for (var k = 0u; k < K; k++) {
        let wv = vec4<f32>(w[wr[0] + k], w[wr[1] + k], w[wr[2] + k], w[wr[3] + k]);
        for (var i = 0u; i < 4u; i++) {
            let xv = x[xr[i] + k];
            for (var j = 0u; j < 4u; j++) {
                acc[i][j] += xv * wv[j];
            }
        }
    }
    for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) {
            if (m0 + i < M && n0 + j < N) {
                y[(m0 + i) * N + n0 + j] = max(acc[i][j] + bias[n0 + j], 0.0);
            }
        }
    }
}
"""
_kern = wgsl.build(SRC)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        W, b = self.linear.weight, self.linear.bias
        N, K = W.shape
        M = x.numel() // K
        y = torch.empty(*x.shape[:-1], N, dtype=x.dtype)
        _kern.launch((-(-N // 32), -(-M // 32)), x, W, b, y, M=M, K=K, N=N)
        return y
