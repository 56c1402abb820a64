import torch
import torch.nn as nn

from kforge_worker import native


class ModelNew(nn.Module):
    def forward(self, *inputs):
        a, b = inputs
        return torch.mm(a, b)
