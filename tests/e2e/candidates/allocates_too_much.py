import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        scratch = torch.empty(1 << 36)  # 256 GiB of float32
        return a * self.scale + b + scratch[:1] * 0
