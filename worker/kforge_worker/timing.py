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


class CudaTimer:
    device_kind = "cuda"

    def __init__(self, device: str):
        self.device = torch.device(device)
        props = torch.cuda.get_device_properties(self.device)
        l2 = getattr(props, "L2_cache_size", 0) or 50 * 1024 * 1024
        self._flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device=self.device)
        self._props = props

    def measure(self, fn: Callable[[], object], reps: int) -> List[float]:
        times = []
        for _ in range(reps):
            self._flush.fill_(reps)
            torch.cuda.synchronize(self.device)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize(self.device)
            times.append(start.elapsed_time(end))
        return times

    def info(self) -> dict:
        info = {"timer": "cuda_events", "device_name": self._props.name,
                "l2_flush_bytes": self._flush.numel() * 4}
        info.update(_cuda_clocks(self.device.index or 0))
        return info


def _cuda_clocks(index: int) -> dict:
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        return {
            "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "mem_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
        }
    except Exception as exc:  # NVML is optional; say why the clocks are missing
        return {"clocks_unavailable": str(exc)[:200]}


def make_timer(device: str):
    if device.startswith("cuda"):
        return CudaTimer(device)
    return CpuTimer()
