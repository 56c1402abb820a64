"""Timing on a CUDA device: CUDA events around each repetition, on a cold L2 and a busy queue.

Each repetition: read a buffer of twice the L2 size (evicts the inputs and outputs of the last
call, and writes back its dirty lines: flushing by writing instead would leave L2 full of dirty lines
that the timed call then pays to write back, about 7 us on an H100), queue a short spin kernel, then
record the start event, call the function and record the end event, and finally synchronize the
whole device (so nothing from this call overlaps the next, on any stream).

Work the call leaves on other streams finishes after the end event; so a third event is recorded
once the whole device is idle. When it lands much later than the end event (beyond the host round
trip measured at start-up), that repetition counts up to it instead: work on any stream is timed. The spin kernel keeps the GPU busy while the host queues the call, so the start event does
not fire before the first kernel is even launched: what is measured is the GPU's time for the call,
as Nsight Compute would report it, plus any gaps the host leaves between the call's own launches.

The SM and memory clocks are read through NVML right after each block of repetitions, while the GPU
is still at its working clocks, and reported with the timer's description.
"""

import ctypes
import os
from typing import Callable, List

import torch

# Time the spin kernel keeps the GPU busy; longer than a Python call takes to queue its launches.
SPIN_US = 150
# Device-idle time beyond the end event (less the host round trip) that counts as escaped work.
ESCAPE_MS = 0.05
ESCAPE_REL = 0.25


class CudaTimer:
    device_kind = "cuda"

    def __init__(self, device: str):
        self.device = torch.device(device)
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        props = torch.cuda.get_device_properties(self.device)
        self._props = props
        l2 = getattr(props, "L2_cache_size", 0) or 50 * 1024 * 1024
        self._flush = torch.zeros(2 * l2 // 4, dtype=torch.float32, device=self.device)
        # clock_rate is in kHz; the spin kernel counts SM cycles.
        khz = getattr(props, "clock_rate", 0) or 1_980_000
        self._spin_cycles = int(SPIN_US * khz / 1000)
        self._nvml = _Nvml.open(props)
        self._samples = []
        self.escaped_reps = 0
        with torch.cuda.device(self.device):
            self._round_trip_ms = min(self._rep(lambda: None)[1] for _ in range(5))

    def _rep(self, fn, before=None, after=None, rep: int = 0):
        """One repetition: (ms from start to end event, ms from end event to device idle). ``before`` and
        ``after`` (input swap, output snapshot) run outside the events, queued on the current stream."""
        if before:
            before(rep)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        idle = torch.cuda.Event(enable_timing=True)
        self._flush.sum()
        torch.cuda._sleep(self._spin_cycles)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize(self.device)
        idle.record()
        torch.cuda.synchronize(self.device)
        if after:
            after(rep)
        return start.elapsed_time(end), end.elapsed_time(idle)

    def measure(self, fn: Callable[[], object], reps: int, before=None, after=None) -> List[float]:
        times = []
        with torch.cuda.device(self.device):
            for rep in range(reps):
                t, tail = self._rep(fn, before, after, rep)
                escaped = tail - self._round_trip_ms
                if escaped > ESCAPE_MS + ESCAPE_REL * t:
                    self.escaped_reps += 1
                    t += escaped
                times.append(t)
        self._samples.append(self.clocks())
        return times

    def clocks(self) -> dict:
        return self._nvml.clocks() if self._nvml else {}

    def device_state(self) -> dict:
        """The clocks read after the last block (empty before the first), and how many repetitions so
        far left work running on other streams after their end event."""
        state = dict(self._samples[-1]) if self._samples else {}
        state["escaped_reps"] = self.escaped_reps
        return state

    def info(self) -> dict:
        p = self._props
        info = {"timer": "cuda_events", "device_name": p.name, "device_index": self.device.index,
                "compute_capability": f"{p.major}.{p.minor}", "sm_count": p.multi_processor_count,
                "l2_bytes": getattr(p, "L2_cache_size", 0), "l2_flush_bytes": self._flush.numel() * 4,
                "spin_us": SPIN_US, "torch_cuda": torch.version.cuda,
                "host_round_trip_ms": round(self._round_trip_ms, 4)}
        if self._nvml:
            info.update(self._nvml.static_info())
            info.update(self.clocks())
        else:
            info["clocks_unavailable"] = _Nvml.error
        return info


class _Nvml:
    """The few NVML calls needed, through ctypes on libnvidia-ml (part of the driver)."""

    error = ""
    _lib = None

    def __init__(self, lib, handle):
        self.lib = lib
        self.handle = handle

    @classmethod
    def open(cls, props):
        try:
            if cls._lib is None:
                lib = ctypes.CDLL("libnvidia-ml.so.1")
                code = lib.nvmlInit_v2()
                if code != 0:
                    raise OSError(f"nvmlInit_v2 returned {code}")
                cls._lib = lib
            lib = cls._lib
            handle = ctypes.c_void_p()
            uuid = str(getattr(props, "uuid", ""))
            code = 1
            if uuid:
                code = lib.nvmlDeviceGetHandleByUUID((uuid if uuid.startswith("GPU-") else "GPU-" + uuid).encode(),
                                                     ctypes.byref(handle))
            if code != 0:
                bus = f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
                code = lib.nvmlDeviceGetHandleByPciBusId_v2(bus.encode(), ctypes.byref(handle))
            if code != 0:
                raise OSError(f"NVML found no device with uuid {uuid} (error {code})")
            return cls(lib, handle)
        except (OSError, AttributeError) as exc:
            cls.error = str(exc)[:200]
            return None

    def _clock(self, fn, which: int):
        v = ctypes.c_uint()
        return v.value if getattr(self.lib, fn)(self.handle, which, ctypes.byref(v)) == 0 else None

    def clocks(self) -> dict:
        # NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2
        return {"sm_clock_mhz": self._clock("nvmlDeviceGetClockInfo", 1),
                "mem_clock_mhz": self._clock("nvmlDeviceGetClockInfo", 2)}

    def static_info(self) -> dict:
        buf = ctypes.create_string_buffer(96)
        driver = buf.value.decode() if self.lib.nvmlSystemGetDriverVersion(buf, 96) == 0 else None
        return {"driver": driver, "max_sm_clock_mhz": self._clock("nvmlDeviceGetMaxClockInfo", 1),
                "max_mem_clock_mhz": self._clock("nvmlDeviceGetMaxClockInfo", 2)}
