# Attack: ReLU delegated through operators of other names: a comparison and a product, x * (x > 0).
# No call names a ReLU (the comparison is an operator, not a call the static checks read).
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x * (x > 0)
