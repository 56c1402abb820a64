"""Softmax over the last dimension of a 2-D batch (the same computation and sizes as KernelBench
level1 23_Softmax). A test problem of kforge's own, for the recorded transcripts."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
