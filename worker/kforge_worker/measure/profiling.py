"""Profiling one forward function in the worker that owns it (`kforge profile`, docs/profiling.md).

    profile        torch.profiler over `reps` calls: the kernels launched (name, launches, device
                   time), the top-level torch operators on the host, launch API calls, and the
                   wall time per call. On the CPU the same run gives the host-side breakdown.
    profile_range  `reps` calls inside cudaProfilerStart/Stop, for Nsight Compute started with
                   `--profile-from-start off` around this worker: only these calls' kernels are
                   profiled, not the warm-up, input loading or the flush of kforge's timer.

In the candidate worker these figures are the candidate process's own account: diagnostics for the
performance analysis, never an input to a verdict.
"""

import time
import warnings
from collections import defaultdict

import torch

# Host-side calls that launch work on the GPU: their count and CPU time are the launch overhead.
LAUNCH_APIS = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx",
               "cudaLaunchCooperativeKernel", "cudaGraphLaunch")
TOP_KERNELS = 12
TOP_OPS = 10


def sync(device: str) -> None:
    """Waits for the device's queued work (nothing to wait for on the CPU)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _is_device_event(event) -> bool:
    kind = getattr(event, "device_type", None)
    return kind is not None and kind != torch.autograd.DeviceType.CPU


def _duration_us(event) -> float:
    return float(event.time_range.elapsed_us())


def summarize_events(events, reps: int, wall_s: float) -> dict:
    """Reduces torch.profiler's events of `reps` calls to per-call figures (all times in µs)."""
    kernels = defaultdict(lambda: {"launches": 0, "device_us": 0.0})
    launches = {"calls": 0, "cpu_us": 0.0}
    ops = defaultdict(lambda: {"calls": 0, "cpu_us": 0.0})
    busy_us = 0.0
    for e in events:
        if _is_device_event(e):
            k = kernels[e.name]
            k["launches"] += 1
            k["device_us"] += _duration_us(e)
            busy_us += _duration_us(e)
        elif e.name in LAUNCH_APIS:
            launches["calls"] += 1
            launches["cpu_us"] += _duration_us(e)
        elif getattr(e, "cpu_parent", None) is None and e.name != "ProfilerStep*":
            o = ops[e.name]
            o["calls"] += 1
            o["cpu_us"] += _duration_us(e)
    wall_us = 1e6 * wall_s / reps
    kernel_list = sorted(({"name": name, "launches_per_call": v["launches"] / reps,
                           "device_us_per_call": v["device_us"] / reps} for name, v in kernels.items()),
                         key=lambda k: -k["device_us_per_call"])
    for k in kernel_list:
        k["share"] = k["device_us_per_call"] / (busy_us / reps) if busy_us else 0.0
    op_list = sorted(({"name": name, "calls_per_call": v["calls"] / reps, "cpu_us_per_call": v["cpu_us"] / reps}
                      for name, v in ops.items()), key=lambda o: -o["cpu_us_per_call"])
    ops_us = sum(o["cpu_us_per_call"] for o in op_list)
    return {
        "reps": reps,
        "wall_us_per_call": wall_us,
        "kernels_per_call": sum(v["launches"] for v in kernels.values()) / reps,
        "distinct_kernels": len(kernel_list),
        "device_busy_us_per_call": busy_us / reps,
        "launch_api_calls_per_call": launches["calls"] / reps,
        "launch_api_us_per_call": launches["cpu_us"] / reps,
        "kernels": kernel_list[:TOP_KERNELS],
        "host_ops": op_list[:TOP_OPS],
        "host_ops_us_per_call": ops_us,
        "outside_torch_ops_us_per_call": max(0.0, wall_us - ops_us),
    }


def profile(call, device: str, reps: int) -> dict:
    """torch.profiler over `reps` calls of `call` (already warmed up by the timing that came first)."""
    from torch.profiler import ProfilerActivity, profile as torch_profile

    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    call()
    sync(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's notice that a profiler cycle's events are cleared after it
        with torch_profile(activities=activities) as prof:
            start = time.perf_counter()
            for _ in range(reps):
                call()
            sync(device)
            wall = time.perf_counter() - start
        result = summarize_events(prof.events(), reps, wall)
    result["threads"] = torch.get_num_threads()
    result["device"] = device
    return result


def profile_range(call, device: str, reps: int, warmup: int = 2) -> dict:
    """`reps` calls inside a CUDA profiler range, for Nsight Compute (`--profile-from-start off`)."""
    if not device.startswith("cuda"):
        raise ValueError("profile_range needs a CUDA device")
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    cudart = torch.cuda.cudart()
    cudart.cudaProfilerStart()
    start = time.perf_counter()
    for _ in range(reps):
        call()
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    cudart.cudaProfilerStop()
    return {"reps": reps, "wall_seconds": wall}


def handlers(session) -> dict:
    """The two commands for a worker session: both profile ``session.model`` called on the timing
    inputs (``session.profiling_inputs()``, once timing was prepared) on ``session.device``."""
    def forward():
        model, inputs = session.model, session.profiling_inputs()

        def call():
            with torch.no_grad():
                model(*inputs)

        return call, session.device

    def profile_cmd(req: dict) -> dict:
        return profile(*forward(), int(req.get("reps", 10)))

    def profile_range_cmd(req: dict) -> dict:
        return profile_range(*forward(), int(req.get("reps", 1)))

    return {"profile": profile_cmd, "profile_range": profile_range_cmd}
