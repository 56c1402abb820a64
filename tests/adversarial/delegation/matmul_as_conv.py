# Attack: the reference's matmul done as a 1x1 conv2d, which the target allows as a library call:
# out[m, n] = sum_k a[m, k] b[k, n] is a convolution of a^T (K channels, M pixels) with b^T as N
# 1x1 filters. A convolution the reference never computes.
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, a, b):
        m, k = a.shape
        n = b.shape[1]
        image = a.t().contiguous().view(1, k, m, 1)
        filters = b.t().contiguous().view(n, k, 1, 1)
        return F.conv2d(image, filters).view(n, m).t()
