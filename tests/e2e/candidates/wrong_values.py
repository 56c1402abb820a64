import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        out = a * self.scale + b
        out[7] += 0.5  # one element off
        return out
