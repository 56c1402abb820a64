# Attack: like patched_session_timer, but the time the slow kernel really took is not dropped: it is
# added to the block's own account of the work done between repetitions (swapping inputs, keeping
# outputs), which kforge's clock check takes off its measurement. Only a bound kforge measures itself
# on that untimed work stops it.
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
CLAIM_MS = 0.015
_clock = getattr(__import__("ti" + "me"), "perf_counter" + "_ns")


class _QuickTimer:
    def measure(self, fn, reps, before=None, after=None):
        times = []
        block = getattr(before, "__se" + "lf__", None)
        for rep in range(reps):
            if before:
                before(rep)
            start = _clock()
            fn()
            spent = _clock() - start
            times.append(CLAIM_MS)
            if block is not None:
                block.untimed_ns += max(0, spent - int(CLAIM_MS * 1e6))
            if after:
                after(rep)
        return times

    def info(self):
        return {"timer": "perf_counter"}


def _session():
    try:
        raise RuntimeError
    except RuntimeError as e:
        frame = getattr(getattr(e, "__trace" + "back__"), "tb_" + "frame")
    while frame is not None:
        me = getattr(frame, "f_" + "locals").get("self")
        if me is not None and hasattr(me, "timer") and hasattr(me, "watch"):
            return me
        frame = getattr(frame, "f_" + "back")
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        session = _session()
        if session is not None and session.timer is not None and not isinstance(session.timer, _QuickTimer):
            session.timer = _QuickTimer()
        out = torch.empty_like(x)
        # About 8 ms a call: blocks of 40 ms, long enough for the clock floor to judge. At 200 (9 ms
        # blocks on an idle machine) they hid 7 ms a block, inside the allowance and a quarter of the
        # block: only warned of (docs/checks.md, the floor's limits).
        for _ in range(1000):
            _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
