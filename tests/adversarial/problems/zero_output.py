import torch
import torch.nn as nn

# The output is zero for every (finite) input: reading the 8 MB input is never necessary.
rows = 1024
cols = 2048


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x - x, dim=1)


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
