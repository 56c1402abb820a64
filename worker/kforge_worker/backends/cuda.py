"""A GPU torch drives through its ``cuda`` device type (NVIDIA, or AMD under a ROCm build): peaks timed
with device events, bounds from the model's datasheet."""

import torch

from kforge_worker.backends import peak_bounds

COPY_BYTES = 1 << 30
MATMUL_N = {torch.float32: 8192, torch.float16: 8192, torch.bfloat16: 8192, torch.float64: 4096}


def model_name(device: str) -> str:
    return torch.cuda.get_device_name(torch.device(device))


def _best(fn, reps: int) -> float:
    """Best seconds of ``fn`` over ``reps`` calls, each timed with device events (no host overhead)."""
    fn()
    best = float("inf")
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    return best


def measure_peaks(device: str) -> dict:
    dev = torch.device(device)
    n = COPY_BYTES // 4
    with torch.cuda.device(dev):
        src, dst = torch.rand(n, device=dev), torch.empty(n, device=dev)
        # A copy alone understates DRAM bandwidth: streams that only read or only write run faster, and a
        # well-written elementwise kernel can beat copy_. The ceiling is the best stream of the three.
        streams = {"copy": (2 * COPY_BYTES, _best(lambda: dst.copy_(src), 5)),
                   "read": (COPY_BYTES, _best(lambda: src.sum(), 5)),
                   "write": (COPY_BYTES, _best(lambda: dst.fill_(1.0), 5))}
        rates = {name: nbytes / t for name, (nbytes, t) in streams.items()}
        levels = [{"working_set_bytes": 2 * COPY_BYTES, "bytes_per_s": max(rates.values()),
                   "streams_bytes_per_s": rates}]
        del src, dst
        flops = {}
        for dtype, size in MATMUL_N.items():
            a, b = torch.rand(size, size, dtype=dtype, device=dev), torch.rand(size, size, dtype=dtype, device=dev)
            flops[str(dtype).replace("torch.", "")] = 2 * size ** 3 / _best(lambda: torch.mm(a, b), 5)
        # fp32 products on the tensor cores (TF32): the rate behind the error-compensated 3xTF32 route
        # of strict precision (sol.flop_routes). The switch is restored for the evaluation's policy.
        size = MATMUL_N[torch.float32]
        a, b = torch.rand(size, size, device=dev), torch.rand(size, size, device=dev)
        allowed = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            flops["tfloat32"] = 2 * size ** 3 / _best(lambda: torch.mm(a, b), 5)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = allowed
    return {"bandwidth": levels, "flops": flops}


def theoretical_bounds(device: str) -> dict:
    return peak_bounds.gpu_bounds(model_name(device))
