import torch
import torch.nn as nn

# A reference that loops over rows in Python: eager pays per-op overhead a fused kernel does not.
rows = 4096  # eager pays per op and row (~33 ms here), the fused call ~0.15 ms: ~250x, far past the 20x warning
cols = 4


class Model(nn.Module):
    def forward(self, x):
        return torch.stack([torch.relu(x[i]) * 2.0 for i in range(x.shape[0])])


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
