"""Timing one forward call, repeatedly, on the device the problem runs on.

CPU: a monotonic clock around each call. CUDA: events around each call, a device-wide
synchronize after it (so work on other streams cannot escape the timer), and the L2 cache flushed
before it by writing a buffer of twice the L2 size. Between repetitions (outside the timed region)
``before``/``after`` swap the inputs and keep the outputs (timed_reps.py). kforge interleaves blocks of repetitions of
the candidate and the reference and cross-checks the sum of these times against its own clock.
"""

import time
from typing import Callable, List, Optional

import torch


class CpuTimer:
    device_kind = "cpu"

    def measure(self, fn: Callable[[], object], reps: int, before: Optional[Callable[[int], None]] = None,
                after: Optional[Callable[[int], None]] = None) -> List[float]:
        """``before(i)`` and ``after(i)`` run around repetition i, outside the timed region."""
        times = []
        for rep in range(reps):
            if before:
                before(rep)
            start = time.perf_counter_ns()
            fn()
            times.append((time.perf_counter_ns() - start) / 1e6)
            if after:
                after(rep)
        return times

    def info(self) -> dict:
        return {"timer": "perf_counter", "threads": torch.get_num_threads()}


def make_timer(device: str):
    if device.startswith("cuda"):
        from kforge_worker.measure.cuda_timing import CudaTimer  # events, L2 flush, clocks: see there

        return CudaTimer(device)
    return CpuTimer()
