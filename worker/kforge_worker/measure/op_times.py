"""How much of a forward's time each computation takes, in the process that runs the forward.

kforge reports the library calls a target lets a candidate keep (a GEMM before its own fused
epilogue) with their share of the candidate's time (EvalResult ``library_calls.share``): a few
forward calls on the timing inputs, each aten operator timed from its dispatch to its end. On a GPU
the device is synchronised before and after every operator, so an operator's time is its kernels'
time; the candidate's own kernels, launched outside aten, make up the rest of the call. These calls
are never timed for the speedup.

In the candidate worker the figures are the candidate process's own account, like kforge profile's:
a report, never an input to a verdict.
"""

import statistics
import time
from collections import defaultdict

import torch

from kforge_worker.common import dispatch_mode, ops
from kforge_worker.measure.profiling import sync


class _OpTimer(dispatch_mode.LightDispatchMode):
    """Adds each aten operator's time to ``seconds`` under its canonical computation (glue such as
    views and copies under its own name)."""

    def __init__(self, seconds: dict, device: str):
        super().__init__()
        self.seconds, self.device = seconds, device

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        sync(self.device)
        start = time.perf_counter()
        out = func(*args, **(kwargs or {}))
        sync(self.device)
        self.seconds[ops.canonical(name) or name] += time.perf_counter() - start
        return out


def measure(call, device: str, reps: int = 3) -> dict:
    """``call()`` run ``reps`` times with every operator timed: the median seconds of a whole call
    and, per computation, the median of its seconds in a call."""
    totals, calls = [], []
    with torch.no_grad():
        call()  # warm: first-call work (allocator, lazy loading) is not the computation's
        for _ in range(max(1, reps)):
            seconds = defaultdict(float)
            sync(device)
            start = time.perf_counter()
            with dispatch_mode.make(_OpTimer, seconds, device):
                call()
            sync(device)
            totals.append(time.perf_counter() - start)
            calls.append(seconds)
    names = set().union(*calls)
    return {"seconds": statistics.median(totals), "reps": len(totals),
            "ops": {name: statistics.median(c.get(name, 0.0) for c in calls) for name in names}}


def handlers(session) -> dict:
    """``op_times``: ``session.model`` on its timing inputs (``session.profiling_inputs()``)."""
    def op_times(req: dict) -> dict:
        model, inputs = session.model, session.profiling_inputs()
        return measure(lambda: model(*inputs), session.device, int(req.get("reps", 3)))

    return {"op_times": op_times}
