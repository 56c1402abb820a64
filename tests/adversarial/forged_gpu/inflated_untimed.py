"""Attack (cuda target): like patched_session_timer, but the time the slow kernel really took is not
dropped: it is added to the block's own account of the work done between repetitions (swapping
inputs, keeping outputs), which kforge's clock check takes off its measurement. Only a bound kforge
measures itself on that untimed work stops it.

Its kernel is a CUDA kernel of its own (spins 10 ms on the GPU, then a correct ReLU; no torch
computation), so only the forged account is wrong. Stopped today by `static.dynamic_code` (its names
are built at run time), as on the CPU; kforge's clock floor, where it rejects, stops it with
`timing_crosscheck`. CPU original: tests/adversarial/forged/.
"""
import torch
import torch.nn as nn

from kforge_kernels import cuda

# ReLU after a spin on the GPU's global nanosecond timer: correct output, as slow as asked.
SRC = r"""
extern "C" __global__ void relu_slow(const float* __restrict__ x, float* __restrict__ y, long long n,
                                     long long spin_ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while ((long long)(now - start) < spin_ns);
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
_mod = cuda.compile(SRC)
SPIN_NS = 10_000_000  # 10 ms a call, where the ReLU alone takes a few microseconds
CLAIM_MS = 0.002
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
            torch.cuda.synchronize()  # the launch returns at once: wait for the kernel to know its time
            spent = _clock() - start
            times.append(CLAIM_MS)
            if block is not None:
                block.untimed_ns += max(0, spent - int(CLAIM_MS * 1e6))
            if after:
                after(rep)
        return times

    def info(self):
        return {"timer": "cuda_events"}


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
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _mod.relu_slow(grid=(n + 255) // 256, block=256, args=(x, out, n, SPIN_NS))
        return out
