import torch
import torch.nn as nn

from kforge_kernels import native

# C = A @ B, row-major. Each task owns a 4-row x 256-column tile of C kept in a local accumulator
# (4 KB, in L1) and streams rows of B: the inner j loop is contiguous and vectorises. K is summed in
# blocks of KB whose sums are added: one float32 running sum over K = 1024 products sometimes strays
# past the check's atol + rtol * |C| (1e-4 each) at an entry near zero (its worst over 150 draws was
# 0.82 of that bound), the blocked sum's worst was 0.50.
SRC = r"""
#include <cstdint>
#include <cstring>
extern "C" void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                       int64_t M, int64_t K, int64_t N) {
    const int64_t MB = 4, NB = 256, KB = 32;
    const int64_t mt = (M + MB - 1) / MB, nt = (N + NB - 1) / NB;
    #pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < mt * nt; ++t) {
        const int64_t i0 = (t / nt) * MB, j0 = (t % nt) * NB;
        const int64_t mb = M - i0 < MB ? M - i0 : MB, nb = N - j0 < NB ? N - j0 : NB;
        alignas(64) float acc[MB][NB], part[MB][NB];
        std::memset(acc, 0, sizeof(acc));
        for (int64_t k0 = 0; k0 < K; k0 += KB) {
            std::memset(part, 0, sizeof(part));
            for (int64_t k = k0; k < K && k < k0 + KB; ++k) {
                const float* b = B + k * N + j0;
                for (int64_t ii = 0; ii < mb; ++ii) {
                    const float a = A[(i0 + ii) * K + k];
                    #pragma omp simd
                    for (int64_t j = 0; j < nb; ++j) part[ii][j] += a * b[j];
                }
            }
            for (int64_t ii = 0; ii < mb; ++ii) {
                #pragma omp simd
                for (int64_t j = 0; j < nb; ++j) acc[ii][j] += part[ii][j];
            }
        }
        for (int64_t ii = 0; ii < mb; ++ii)
            std::memcpy(C + (i0 + ii) * N + j0, acc[ii], nb * sizeof(float));
    }
}
"""
_lib = native.load(SRC, {"matmul": [native.PTR] * 3 + [native.I64] * 3}, name="matmul")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A = A.contiguous()
        B = B.contiguous()
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty(M, N, dtype=A.dtype)
        _lib.matmul(native.ptr(A), native.ptr(B), native.ptr(C), M, K, N)
        return C
