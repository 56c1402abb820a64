"""The computations of the KernelBench problems the H200 loop benchmark ran (bench/loop_quality.txt),
written out as kforge's own equivalents (same operators, same module structure, smaller sizes): what
the static checks need of a reference is which PyTorch computations it performs."""

SOFTMAX = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)
"""

RMS_NORM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms
"""

LAYER_NORM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x):
        return self.ln(x)
"""

SUM_REDUCTION = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)
"""

NEW_GELU = """
import math
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
"""

GEMM_MULTIPLY_LEAKY_RELU = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.multiplier
        return self.leaky_relu(x)
"""

CONV_ADD_SCALE_SIGMOID_GROUP_NORM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, num_groups, bias_shape, scale_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)
        self.scale = nn.Parameter(torch.randn(scale_shape) * 0.02)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = x + self.bias
        x = x * self.scale
        x = torch.sigmoid(x)
        return self.group_norm(x)
"""

MATMUL_GELU_SOFTMAX = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = F.gelu(x)
        return F.softmax(x, dim=1)
"""

# KernelBench problem name -> its computation
REFERENCES = {
    "23_Softmax": SOFTMAX,
    "36_RMSNorm_": RMS_NORM,
    "40_LayerNorm": LAYER_NORM,
    "47_Sum_reduction_over_a_dimension": SUM_REDUCTION,
    "88_MinGPTNewGelu": NEW_GELU,
    "12_Gemm_Multiply_LeakyReLU": GEMM_MULTIPLY_LEAKY_RELU,
    "21_Conv2d_Add_Scale_Sigmoid_GroupNorm": CONV_ADD_SCALE_SIGMOID_GROUP_NORM,
    "99_Matmul_GELU_Softmax": MATMUL_GELU_SOFTMAX,
}
