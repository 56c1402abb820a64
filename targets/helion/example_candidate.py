import helion
import helion.language as hl
import torch
import torch.nn as nn


# A Helion kernel: PyTorch operations on tiles, compiled to Triton. The configuration is fixed (block
# sizes, warps), so nothing is autotuned while kforge evaluates it.
@helion.kernel(config=helion.Config(block_sizes=[8, 512], num_warps=4), static_shapes=True)
def scale_bias_relu(x: torch.Tensor, bias: torch.Tensor, scale: float) -> torch.Tensor:
    rows, cols = x.size()
    out = torch.empty_like(x)
    for tile_r, tile_c in hl.tile([rows, cols]):
        out[tile_r, tile_c] = torch.relu(x[tile_r, tile_c] * scale + bias[tile_c])
    return out


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features) * 0.1)  # same name and shape as the reference
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x.contiguous().view(-1, x.shape[-1])
        return scale_bias_relu(x2, self.bias.detach(), float(self.scale)).view_as(x)
