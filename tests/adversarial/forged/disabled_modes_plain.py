# Attack, spelled plainly: torch's dispatch modes switched off around the reference's computation.
import torch
import torch.nn as nn
from torch.utils._python_dispatch import _disable_current_modes


class ModelNew(nn.Module):
    def forward(self, x):
        with _disable_current_modes():
            return torch.softmax(x, 1)
