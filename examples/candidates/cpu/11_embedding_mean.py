import torch
import torch.nn as nn

from kforge_kernels import native

SRC = r"""
#include <cstdint>
extern "C" void embedding_mean(const int64_t* __restrict__ idx, const float* __restrict__ table,
                               float* __restrict__ out, int64_t bags, int64_t bag, int64_t dim) {
    #pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < bags; ++b) {
        float* o = out + b * dim;
        for (int64_t d = 0; d < dim; ++d) o[d] = 0.0f;
        for (int64_t k = 0; k < bag; ++k) {
            const float* row = table + idx[b * bag + k] * dim;
            #pragma omp simd
            for (int64_t d = 0; d < dim; ++d) o[d] += row[d];
        }
        const float inv = 1.0f / bag;
        #pragma omp simd
        for (int64_t d = 0; d < dim; ++d) o[d] *= inv;
    }
}
"""
_lib = native.load(SRC, {"embedding_mean": [native.PTR] * 3 + [native.I64] * 3}, name="embedding_mean")


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        idx = indices.contiguous()
        table = self.embedding.weight.detach().contiguous()
        bag = idx.shape[-1]
        out = torch.empty(*idx.shape[:-1], table.shape[1])
        _lib.embedding_mean(native.ptr(idx, dtype=torch.int64), native.ptr(table), native.ptr(out),
                            idx.numel() // bag, bag, table.shape[1])
        return out
