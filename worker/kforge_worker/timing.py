"""Timing one forward call, repeatedly, on the device the problem runs on.

CPU: a monotonic clock around each call. CUDA: events around each call, a device-wide
synchronize after it (so work on other streams cannot escape the timer), and the L2 cache flushed
before it by writing a buffer of twice the L2 size. kforge interleaves blocks of repetitions of
the candidate and the reference and cross-checks the sum of these times against its own clock.
"""

import time
from typing import Callable, List

import torch


class CpuTimer:
    device_kind = "cpu"

    def measure(self, fn: Callable[[], object], reps: int) -> List[float]:
        times = []
        for _ in range(reps):
            start = time.perf_counter_ns()
            fn()
            times.append((time.perf_counter_ns() - start) / 1e6)
        return times

    def info(self) -> dict:
        return {"timer": "perf_counter", "threads": torch.get_num_threads()}


def make_timer(device: str):
    if device.startswith("cuda"):
        from kforge_worker.cuda_timing import CudaTimer  # events, L2 flush, clocks: see there

        return CudaTimer(device)
    return CpuTimer()
