"""The host CPU: peaks measured with the monotonic clock, bounds from /proc/cpuinfo."""

import platform
import time

import torch

from kforge_worker.backends import peak_bounds

# (bytes per buffer) for the bandwidth levels: inside L2, inside a typical L3, far beyond it.
COPY_SIZES = [128 << 10, 2 << 20, 64 << 20]
MATMUL_N = {torch.float32: 512, torch.float64: 384, torch.bfloat16: 256}


def model_name(device: str = "cpu") -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "Processor", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _best(fn, reps: int) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure_peaks(device: str = "cpu") -> dict:
    levels = []
    for size in COPY_SIZES:
        n = size // 4
        src, dst = torch.rand(n), torch.empty(n)
        reps = 20 if size < (8 << 20) else 6
        inner = max(1, (8 << 20) // size)  # small copies are repeated so the clock resolves them

        def copy():
            for _ in range(inner):
                dst.copy_(src)

        t = _best(copy, reps)
        levels.append({"working_set_bytes": 2 * size, "bytes_per_s": 2 * size * inner / t})
    flops = {}
    for dtype, n in MATMUL_N.items():
        a, b = torch.rand(n, n, dtype=dtype), torch.rand(n, n, dtype=dtype)
        t = _best(lambda: torch.mm(a, b), 10)  # best of many: a shared machine is rarely idle throughout
        flops[str(dtype).replace("torch.", "")] = 2 * n ** 3 / t
    return {"bandwidth": levels, "flops": flops}


def theoretical_bounds(device: str = "cpu") -> dict:
    return peak_bounds.cpu_bounds(torch.get_num_threads())
