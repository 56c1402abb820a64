# Attack: reach the timer's list of repetition times through a traceback's frames and turn its
# entries into strings. The worker's own reply then carries them: kforge's C++ read them as numbers,
# threw, and ended `kforge eval A B` (B never evaluated) and `kforge run` with an internal error.
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


def _timer_times():
    try:
        raise RuntimeError
    except RuntimeError as e:
        frame = getattr(getattr(e, "__trace" + "back__"), "tb_" + "frame")
    while frame is not None:
        seen = getattr(frame, "f_" + "locals")
        if isinstance(seen.get("times"), list) and "reps" in seen:
            return seen["times"]
        frame = getattr(frame, "f_" + "back")
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        times = _timer_times()
        if times:
            times[:] = ["fast"] * len(times)
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
