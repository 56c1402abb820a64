import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Without torch/extension.h (no_implicit_headers): a fraction of the parse, and no precompiled header
# for the builder to make (minutes on CI's two cores); the builder's path is the same.
CPP = r"""
#include <torch/types.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>
torch::Tensor relu_out(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    return y;
}
"""
_ext = load_inline(name="relu_inline", cpp_sources=CPP, functions=["relu_out"], extra_cflags=["-O2"],
                   no_implicit_headers=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return _ext.relu_out(x.contiguous())
