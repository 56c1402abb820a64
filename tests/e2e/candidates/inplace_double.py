import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        x.mul_(2.0)  # as the reference does: the caller sees its input doubled
        return x + 1.0
