"""Attack (cuda target): find the worker's pending request through a traceback's frames and write a
complete, well-typed `time` reply to the worker's reply descriptor (fd 3) before the real one: fast
times for a kernel that spins 10 ms on the GPU before its ReLU. The real reply follows.

Its kernel is a CUDA kernel of its own (correct, no torch computation), so only the forged reply is
wrong. Must be stopped by: `protocol` (rejected: a reply the worker did not send for the pending
request). Its computed names also fail `static.dynamic_code`. CPU original: tests/adversarial/forged/.
"""
import json

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
_os = __import__("o" + "s")
_answered = set()
CLAIM_MS = 0.002


def _pending():
    try:
        raise RuntimeError
    except RuntimeError as e:
        frame = getattr(getattr(e, "__trace" + "back__"), "tb_" + "frame")
    while frame is not None:
        seen = getattr(frame, "f_" + "locals")
        if "request" in seen and "rid" in seen and isinstance(seen["request"], dict):
            return seen["request"]
        frame = getattr(frame, "f_" + "back")
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        req = _pending()
        if req is not None and req.get("cmd") == "time" and req["id"] not in _answered:
            _answered.add(req["id"])
            reps = int(req["reps"])
            reply = {"times_ms": [CLAIM_MS] * reps, "events": [], "tampered": [], "inputs_changed": [],
                     "inputs_changed_count": 0, "new_output_types": [], "untimed_ms": 0.0, "ok": True,
                     "id": req["id"], "cmd": "time"}
            _os.write(3, (json.dumps(reply) + "\n").encode())
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _mod.relu_slow(grid=(n + 255) // 256, block=256, args=(x, out, n, SPIN_NS))
        return out
