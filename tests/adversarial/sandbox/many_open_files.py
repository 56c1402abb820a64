"""Opens 100,000 descriptors (of one file): kernel memory, and a candidate's open files."""

import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void note(char* msg, const char* what) { snprintf(msg, 255, "%s: %s", what, strerror(errno)); }

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

extern "C" void attack(int32_t* ok, char* msg) {
    for (int i = 0; i < 100000; ++i) {
        int fd = open("/proc/self/stat", O_RDONLY);
        if (fd < 0) { snprintf(msg, 255, "descriptor %d: %s", i, strerror(errno)); return; }
    }
    *ok = 1;
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64], "attack": [native.PTR, native.PTR]})

_ok = torch.zeros(1, dtype=torch.int32)
_msg = torch.zeros(256, dtype=torch.uint8)
_lib.attack(native.ptr(_ok, None), native.ptr(_msg, None))
if not int(_ok[0]):
    raise RuntimeError("attack blocked: " + bytes(_msg.tolist()).split(b"\0")[0].decode(errors="replace"))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
