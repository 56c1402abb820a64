import torch
import torch.nn as nn

# One tensor, drawn once and returned by every get_inputs call, which the model changes in place.
_cached = []


class Model(nn.Module):
    def forward(self, x):
        x.mul_(2.0)
        return x + 1.0


def get_inputs():
    if not _cached:
        _cached.append(torch.randn(256, 64))
    return _cached


def get_init_inputs():
    return []
