# Attack: the reference does a small GEMM and a large row sum; the candidate keeps the GEMM (work of
# a kind the reference does with a library call) and also hands the row sum to a GEMM with a column
# of ones, more GEMM work than the reference does.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, w, y):
        ones_w = torch.ones(w.shape[1], 1, dtype=a.dtype, device=a.device)
        ones_y = torch.ones(y.shape[1], 1, dtype=y.dtype, device=y.device)
        return (torch.mm(torch.mm(a, w), ones_w) + torch.mm(y, ones_y)).view(-1)
