import torch
import torch.nn as nn

# diag(a) @ B: the reference multiplies matrices, the exact answer is a row scaling of B.
n = 2048  # the FLOP bound (2 n^3) is then ~60x the row scaling (n^2), also with two busy loops beside it


class Model(nn.Module):
    def forward(self, a, b):
        return torch.diag(a) @ b


def get_inputs():
    return [torch.randn(n), torch.randn(n, n)]


def get_init_inputs():
    return []
