import torch
import torch.nn as nn
import triton
import triton.language as tl


# One program per bag: loads each of the bag's embedding rows (contiguous, BLOCK_D wide) and sums.
@triton.jit
def embedding_mean_kernel(idx_ptr, table_ptr, out_ptr, bag, dim, BLOCK_D: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_D)
    mask = cols < dim
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for j in range(0, bag):
        row = tl.load(idx_ptr + b * bag + j)
        acc += tl.load(table_ptr + row * dim + cols, mask=mask, other=0.0)
    tl.store(out_ptr + b * dim + cols, acc / bag, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        # Same parameter name as the reference's nn.Embedding (embedding.weight), without its forward.
        self.embedding = nn.Module()
        self.embedding.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim))

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        indices = indices.contiguous()
        table = self.embedding.weight.detach().contiguous()
        B, bag = indices.shape
        dim = table.shape[1]
        out = torch.empty(B, dim, dtype=table.dtype, device=table.device)
        embedding_mean_kernel[(B,)](indices, table, out, bag, dim, BLOCK_D=triton.next_power_of_2(dim), num_warps=1)
        return out
