import torch
import torch.nn as nn

from kforge_kernels import wgsl

# C = A @ B, each invocation computing a 4x4 block of C: per step of k it loads four values of B and
# four of A and does 16 multiply-adds. No workgroup memory and no barriers: on lavapipe (the CPU
# Vulkan driver) barriers are costly, while neighbouring invocations already share cache lines.
SRC = """
override M: u32;
override K: u32;
override N: u32;

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;

@compute @workgroup_size(16, 4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col0 = gid.x * 4u;
    let row0 = gid.y * 4u;
    if (col0 >= N || row0 >= M) {
        return;
    }
    // Rows and columns past the edge are clamped for loading and skipped when storing.
    let rows = vec4<u32>(row0, min(row0 + 1u, M - 1u), min(row0 + 2u, M - 1u), min(row0 + 3u, M - 1u));
    let cols = vec4<u32>(col0, min(col0 + 1u, N - 1u), min(col0 + 2u, N - 1u), min(col0 + 3u, N - 1u));
    var acc: array<vec4<f32>, 4>;
    for (var k = 0u; k < K; k++) {
        let bk = k * N;
        let bv = vec4<f32>(b[bk + cols.x], b[bk + cols.y], b[bk + cols.z], b[bk + cols.w]);
        acc[0] += a[rows.x * K + k] * bv;
        acc[1] += a[rows.y * K + k] * bv;
        acc[2] += a[rows.z * K + k] * bv;
        acc[3] += a[rows.w * K + k] * bv;
    }
    for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) {
            if (row0 + i < M && col0 + j < N) {
                c[(row0 + i) * N + col0 + j] = acc[i][j];
            }
        }
    }
}
"""
_kern = wgsl.build(SRC)


class ModelNew(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty(M, N, dtype=A.dtype)
        _kern.launch((-(-N // 64), -(-M // 16)), A, B, C, M=M, K=K, N=N)
        return C
