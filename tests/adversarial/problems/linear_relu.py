import torch
import torch.nn as nn

batch = 64
features = 256


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features]
