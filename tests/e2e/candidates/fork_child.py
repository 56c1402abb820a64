import os

import torch.nn as nn

# A child that outlives the import and would outlive the evaluation if nothing killed it.
if os.fork() == 0:
    os.execv("/bin/sh", ["sh", "-c", "sleep 1000; : kforge_stray_fork"])


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return a * self.scale + b
