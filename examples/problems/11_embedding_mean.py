import torch
import torch.nn as nn


class Model(nn.Module):
    """Embedding lookup by integer indices, averaged over each bag of indices."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        return self.embedding(indices).mean(dim=1)


batch_size = 512
bag_size = 32
num_embeddings = 10000
embedding_dim = 128


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch_size, bag_size), dtype=torch.int64)]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
