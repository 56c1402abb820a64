import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The same kernel through torch.utils.cpp_extension.load_inline: works on torch::Tensor directly,
# but building against the torch headers takes 30-50 s (the native helper takes about a second).
CPP_SRC = r"""
#include <torch/extension.h>

torch::Tensor scale_bias_relu(torch::Tensor x, torch::Tensor bias, double scale) {
    TORCH_CHECK(x.is_contiguous() && bias.is_contiguous(), "inputs must be contiguous");
    TORCH_CHECK(x.scalar_type() == torch::kFloat && bias.scalar_type() == torch::kFloat, "float32 only");
    auto y = torch::empty_like(x);
    const int64_t cols = bias.numel(), rows = x.numel() / cols;
    const float* xp = x.data_ptr<float>();
    const float* bp = bias.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    const float s = static_cast<float>(scale);
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
        #pragma omp simd
        for (int64_t c = 0; c < cols; ++c) {
            const float v = xp[r * cols + c] * s + bp[c];
            yp[r * cols + c] = v > 0.0f ? v : 0.0f;
        }
    }
    return y;
}
"""

_ext = load_inline(
    name="kforge_example_scale_bias_relu",
    cpp_sources=CPP_SRC,
    functions=["scale_bias_relu"],
    extra_cflags=["-O3", "-march=native", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features) * 0.1)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.scale_bias_relu(x.contiguous(), self.bias.detach().contiguous(), self.scale)
