"""Theoretical peaks of the device, from its description, to check measured peaks against.

CPU arithmetic: threads × clock × SIMD lanes × 2 (a fused multiply-add is two FLOPs) × 2 (two FMA
pipes per core, the most any current x86 or Arm server core has), from /proc/cpuinfo's flags and
clock; the clock is the highest of cpufreq's maximum and cpuinfo's "cpu MHz", and a measurement may
exceed the bound by ``CLOCK_SLACK`` (turbo clocks above the reported one).
CPU bandwidth: at most 64 bytes per thread per cycle (one cache line: read and written bytes both
count in a copy), an upper bound for every level beyond L1; the floor is 5% of 16 bytes per cycle, a
single core's sustained stream, so a slow DRAM level of a small VM is not called implausible.
GPU bandwidth: the datasheet figure for known models.

A measured peak above its bound, or below ``FLOOR`` (5%) of it, is implausible: a busy machine
understated it, or the timer failed. sol.device_peaks measures such peaks again. Which bound applies
to a device is its back end's choice (backends/).
"""

import os
from typing import List, Optional


FLOOR = 0.05
CLOCK_SLACK = 1.3
LINE_BYTES_PER_CYCLE = 64
STREAM_BYTES_PER_CYCLE = 16

# Datasheet DRAM bandwidth in bytes/s, by a substring of torch.cuda.get_device_name(); the first match wins.
GPU_BANDWIDTH = [
    ("H200", 4.8e12), ("H100 NVL", 3.9e12), ("H100 PCIe", 2.0e12), ("H100", 3.35e12), ("GH200", 4.0e12),
    ("B200", 8.0e12), ("A100-SXM4-80GB", 2.039e12), ("A100 80GB PCIe", 1.935e12), ("A100", 1.555e12),
    ("L40S", 864e9), ("L40", 864e9), ("L4", 300e9), ("A10G", 600e9), ("A10", 600e9), ("T4", 320e9),
    ("V100", 900e9), ("RTX 4090", 1008e9), ("RTX 3090", 936e9), ("A6000", 768e9),
]


def _cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def cpu_clock_hz(cpuinfo: str) -> Optional[float]:
    clocks = []
    for line in cpuinfo.splitlines():
        if line.startswith("cpu MHz"):
            try:
                clocks.append(float(line.split(":", 1)[1]) * 1e6)
            except ValueError:
                pass
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", encoding="utf-8") as f:
            clocks.append(float(f.read().strip()) * 1e3)  # kHz
    except (OSError, ValueError):
        pass
    return max(clocks) if clocks else None


def cpu_flags(cpuinfo: str) -> List[str]:
    for line in cpuinfo.splitlines():
        if line.startswith(("flags", "Features")):
            return line.split(":", 1)[1].split()
    return []


def simd_lanes(flags: List[str], dtype: str) -> int:
    """Lanes of one SIMD register for this dtype (bf16 counts as fp32 without native bf16 FMAs)."""
    bits = 512 if "avx512f" in flags else 256 if "avx" in flags or "avx2" in flags else 128
    width = {"float64": 64, "float32": 32, "bfloat16": 16 if "avx512_bf16" in flags or "amx_bf16" in flags else 32,
             "float16": 16 if "avx512_fp16" in flags else 32}.get(dtype, 32)
    return bits // width


def cpu_bounds(threads: int, cpuinfo: Optional[str] = None) -> dict:
    """{"flops": {dtype: FLOP/s}, "bandwidth": bytes/s, "clock_hz", "flags_used"}; empty when unknown."""
    cpuinfo = _cpuinfo() if cpuinfo is None else cpuinfo
    clock = cpu_clock_hz(cpuinfo)
    if not clock:
        return {}
    flags = cpu_flags(cpuinfo)
    fma = 2 if "fma" in flags or "asimd" in flags else 1
    flops = {d: threads * clock * CLOCK_SLACK * simd_lanes(flags, d) * fma * 2
             for d in ("float32", "float64", "bfloat16", "float16")}
    return {"flops": flops, "bandwidth": threads * clock * CLOCK_SLACK * LINE_BYTES_PER_CYCLE,
            "bandwidth_floor": FLOOR * threads * clock * STREAM_BYTES_PER_CYCLE, "clock_hz": clock,
            "flags_used": [f for f in ("avx512f", "avx2", "avx", "fma", "avx512_bf16", "asimd") if f in flags]}


def gpu_bounds(name: str) -> dict:
    for key, bandwidth in GPU_BANDWIDTH:
        if key in name:
            return {"bandwidth": bandwidth, "bandwidth_floor": FLOOR * bandwidth, "datasheet": key}
    return {}


def implausible(peaks: dict, bounds: dict) -> List[str]:
    """Why each measured peak is implausible against the bounds (empty: all plausible).

    A GPU's bandwidth is checked against its datasheet figure with no slack: a measured copy stream
    can only come close to it."""
    problems = []
    for dtype, measured in peaks.get("flops", {}).items():
        bound = bounds.get("flops", {}).get(dtype)
        if bound and not FLOOR * bound <= measured <= bound:
            problems.append(f"{dtype} {measured / 1e9:.3g} GFLOP/s against a theoretical {bound / 1e9:.3g} GFLOP/s")
    bound, floor = bounds.get("bandwidth"), bounds.get("bandwidth_floor", 0.0)
    for level in peaks.get("bandwidth", []):
        measured = level["bytes_per_s"]
        if bound and not floor <= measured <= bound:
            problems.append(f"{measured / 1e9:.3g} GB/s at {level['working_set_bytes'] >> 10} KiB against a "
                            f"theoretical {bound / 1e9:.3g} GB/s")
    return problems
