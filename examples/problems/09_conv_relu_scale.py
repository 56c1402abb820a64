import torch
import torch.nn as nn


class Model(nn.Module):
    """3x3 convolution (no padding), ReLU, then multiplication by a constant."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, scale: float):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x)) * self.scale


batch_size = 16
in_channels = 16
out_channels = 32
kernel_size = 3
height = 64
width = 64
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale]
