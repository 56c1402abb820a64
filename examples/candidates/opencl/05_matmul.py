import torch
import torch.nn as nn

from kforge_kernels import ocl

# C = A @ B. Each work-item computes a 4 x 16 tile of C in registers (four float16 accumulators),
# reading contiguous 16-float slices of B rows. The edges that do not fill a whole tile (the last
# M % 4 rows and N % 16 columns) are computed one element per work-item by matmul_edge. Both sum K in
# blocks of KBLOCK and add the blocks' sums: one float32 running sum over K = 1024 products sometimes
# strays past the check's atol + rtol * |C| (1e-4 each) at an entry near zero (its worst over 150 draws
# was 0.82 of that bound, and about one evaluation in 14 failed), the blocked sum's worst was 0.50.
SRC = """
#define KBLOCK 32
__kernel void matmul(__global const float* A, __global const float* B, __global float* C,
                     int M, int K, int N) {
    const int j = get_global_id(0) * 16;
    const int i = get_global_id(1) * 4;
    float16 c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f;
    __global const float* a = A + (long)i * K;
    for (int k0 = 0; k0 < K; k0 += KBLOCK) {
        float16 p0 = 0.0f, p1 = 0.0f, p2 = 0.0f, p3 = 0.0f;
        const int k1 = min(k0 + KBLOCK, K);
        for (int k = k0; k < k1; ++k) {
            const float16 b = vload16(0, B + (long)k * N + j);
            p0 = fma((float16)(a[k]), b, p0);
            p1 = fma((float16)(a[K + k]), b, p1);
            p2 = fma((float16)(a[2 * K + k]), b, p2);
            p3 = fma((float16)(a[3 * K + k]), b, p3);
        }
        c0 += p0; c1 += p1; c2 += p2; c3 += p3;
    }
    __global float* c = C + (long)i * N + j;
    vstore16(c0, 0, c);
    vstore16(c1, 0, c + N);
    vstore16(c2, 0, c + 2 * N);
    vstore16(c3, 0, c + 3 * N);
}

__kernel void matmul_edge(__global const float* A, __global const float* B, __global float* C,
                          int M, int K, int N, int row0, int col0) {
    const int j = col0 + get_global_id(0);
    const int i = row0 + get_global_id(1);
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += KBLOCK) {
        float part = 0.0f;
        for (int k = k0; k < min(k0 + KBLOCK, K); ++k) part = fma(A[(long)i * K + k], B[(long)k * N + j], part);
        acc += part;
    }
    C[(long)i * N + j] = acc;
}
"""
_prog = ocl.build(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A = A.contiguous()
        B = B.contiguous()
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty(M, N, dtype=A.dtype)
        M4, N16 = M - M % 4, N - N % 16
        if M4 and N16:
            _prog.launch("matmul", (N16 // 16, M4 // 4), None, A, B, C, M, K, N)
        if N > N16 and M4:  # right edge of the tiled rows
            _prog.launch("matmul_edge", (N - N16, M4), None, A, B, C, M, K, N, 0, N16)
        if M > M4:  # bottom rows, all columns
            _prog.launch("matmul_edge", (N, M - M4), None, A, B, C, M, K, N, M4, 0)
        return C
