# Attack: softmax delegated through another library computation: exp(log_softmax(x)).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.exp(torch.log_softmax(x, dim=1))
