import torch
import torch.nn as nn

# The output does not depend on the input at all: every honest kernel returns ones.
rows = 32
cols = 128


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x * 0, dim=1) + 1


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
