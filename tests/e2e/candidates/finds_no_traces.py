"""Correct, and refuses to load in a process an earlier candidate has used (see leaves_traces.py). It does not
look at its environment variables: static.environment_probe would reject it."""
import sys

import torch
import torch.nn as nn

traces = [t for t, found in [("torch attribute", hasattr(torch, "_kforge_leftover")),
                             ("module", "kforge_leftover" in sys.modules)] if found]
if traces:
    raise RuntimeError(f"this process served an earlier candidate: {', '.join(traces)} left behind")


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return a * self.scale + b
