import sys

import torch.nn as nn

chunk = "x" * 1023 + "\n"
for _ in range(100 * 1024):  # 100 MB
    sys.stdout.write(chunk)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return a * self.scale + b
