# Attack: the reference spells GELU out elementwise (tanh, pow, mul, add); the candidate calls
# PyTorch's own GELU, a computation the reference never hands to a library. The operator names differ
# from the reference's, so a check that compares names finds no overlap.
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, x):
        return F.gelu(x, approximate="tanh")
