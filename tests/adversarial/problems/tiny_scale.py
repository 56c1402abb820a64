import torch
import torch.nn as nn

# Outputs around 1e-5: far below the default absolute tolerance, so zeros pass it.
rows = 64
cols = 256


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 1e-5


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
