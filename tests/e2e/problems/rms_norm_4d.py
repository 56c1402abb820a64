"""RMS normalisation over the feature dimension (dim 1) of a 4-D tensor, without learned parameters
(the same computation and sizes as KernelBench level1 36_RMSNorm_). A test problem of kforge's own,
for the recorded transcripts."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms


batch_size = 112
features = 64
dim1 = 512
dim2 = 512


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
