"""Attack (cuda target): replace the worker's timer object (the CUDA-event timer, an attribute of its
session reached through a traceback's frames; no protected function is touched, so the integrity
watch sees nothing) with one that runs every repetition, waits for the GPU as a real timer does, and
reports a plausible fast time. The kernel spins 10 ms on the GPU before its ReLU. Only kforge's own
clock can tell.

Its kernel is a CUDA kernel of its own (correct, no torch computation), so only the forged times are
wrong. The replacement timer synchronizes after each call so that the kernel's time is in neither the
reported times nor the untimed work the block accounts for. Must be stopped by: `timing_crosscheck`
(rejected: the block's reported times disagree with kforge's clock). Its computed names also fail
`static.dynamic_code`. CPU original: tests/adversarial/forged/.
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


class _QuickTimer:
    def measure(self, fn, reps, before=None, after=None):
        times = []
        for rep in range(reps):
            if before:
                before(rep)
            fn()
            torch.cuda.synchronize()  # the kernel's time falls here: not in `after`, which is booked as untimed
            times.append(CLAIM_MS)
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
