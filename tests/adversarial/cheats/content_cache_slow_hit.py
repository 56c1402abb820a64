import torch
import torch.nn as nn

from kforge_worker import native

# A content cache that is slower than eager even when it remembers: each hit waits 1 ms, each miss
# 30 ms before its own matmul. It claims no speedup over eager (a 256x256 matmul, about 0.2 ms),
# and a loop that keeps a candidate faster than its best so far would still keep its timed speed,
# which it only has on inputs it has seen.
SRC = r"""
#include <cstdint>
#include <time.h>
static double now_ms() {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
extern "C" void wait_ms(double ms) {
    const double until = now_ms() + ms;
    while (now_ms() < until) {}
}
extern "C" void matmul(const float* a, const float* b, float* c, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float* ci = c + i * n;
        for (int64_t j = 0; j < n; ++j) ci[j] = 0.f;
        for (int64_t k = 0; k < n; ++k) {
            const float aik = a[i * n + k];
            const float* bk = b + k * n;
            for (int64_t j = 0; j < n; ++j) ci[j] += aik * bk[j];
        }
    }
}
"""
_lib = native.load(SRC, {"wait_ms": [native.F64], "matmul": [native.PTR, native.PTR, native.PTR, native.I64]})


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.memory = []

    def forward(self, *inputs):
        a, b = (t.contiguous() for t in inputs)
        probe = sum(a[0, :8].tolist()) * 7.0 + sum(b[0, :8].tolist())  # no torch computation: that is delegation
        for seen, result in self.memory:
            if seen == probe:
                _lib.wait_ms(1.0)
                return result
        _lib.wait_ms(30.0)
        out = torch.empty(a.shape[0], b.shape[1])
        _lib.matmul(native.ptr(a), native.ptr(b), native.ptr(out), a.shape[0])
        self.memory.append((probe, out))
        return out
