import torch
import torch.nn as nn

size = 64


class Model(nn.Module):
    def forward(self, x):
        raise ValueError("this reference is broken")


def get_inputs():
    return [torch.randn(size)]


def get_init_inputs():
    return []
