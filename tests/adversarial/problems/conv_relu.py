import torch
import torch.nn as nn

batch = 4
channels = 8
features = 16
size = 32


class Model(nn.Module):
    def __init__(self, channels, features):
        super().__init__()
        self.conv = nn.Conv2d(channels, features, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(batch, channels, size, size)]


def get_init_inputs():
    return [channels, features]
