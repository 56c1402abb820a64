"""Correct, but leaves traces in its process that a later candidate sharing the process would find."""
import os
import sys
import types

import torch
import torch.nn as nn

torch._kforge_leftover = os.getpid()
os.environ["KFORGE_LEFTOVER"] = str(os.getpid())
sys.modules["kforge_leftover"] = types.ModuleType("kforge_leftover")


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return a * self.scale + b
