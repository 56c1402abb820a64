# Attack, spelled plainly: torch's own alias of the switch that turns __torch_dispatch__ off
# (torch.utils._mode_utils.no_dispatch is torch._C._DisableTorchDispatch, bound when torch was imported).
import torch
import torch.nn as nn
from torch.utils._mode_utils import no_dispatch


class ModelNew(nn.Module):
    def forward(self, x):
        with no_dispatch():
            return torch.softmax(x, 1)
