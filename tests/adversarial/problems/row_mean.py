import torch
import torch.nn as nn

# Row means of uniform inputs sit near 0.5e-3 with a small spread: a constant passes the default check.
rows = 64
cols = 4096


class Model(nn.Module):
    def forward(self, x):
        return torch.mean(x, dim=1) * 1e-3


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
