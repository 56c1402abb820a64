import math

import torch
import torch.nn as nn

# GELU spelled out elementwise, as in KernelBench's 88_MinGPTNewGelu: no library GELU in the reference.
rows = 64
cols = 2048


class Model(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
