# Attack, spelled plainly: the worker's pending request read through a traceback's frames
# (`__traceback__`, `tb_frame`, `f_back`), which the audit hook does not see.
import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64]})


def _pending_command():
    try:
        raise RuntimeError
    except RuntimeError as e:
        frame = e.__traceback__.tb_frame
    while frame is not None:
        if "request" in frame.f_locals:
            return frame.f_locals["request"].get("cmd")
        frame = frame.f_back
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        self.last_command = _pending_command()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
