# Attack: the reference's row sums done as a matrix product with a column of ones, a GEMM on a
# problem that computes no GEMM (matmul is an allowed library call on this target).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        ones = torch.ones(x.shape[1], 1, dtype=x.dtype, device=x.device)
        return torch.matmul(x, ones).view(-1) * 5.0
