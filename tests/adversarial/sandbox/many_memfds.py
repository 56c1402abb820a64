"""Sixteen memory files of 256 MiB, every page touched with pwrite: each far under any file-size cap,
4 GiB together, none of it mapped."""

import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

extern "C" void attack(int32_t* ok, char* msg) {
    const int64_t size = int64_t(256) << 20;
    const char byte = 1;
    for (int k = 0; k < 16; ++k) {
        int fd = memfd_create("pages", 0);
        if (fd < 0) { snprintf(msg, 255, "memfd_create %d: %s", k, strerror(errno)); return; }
        if (ftruncate(fd, size) != 0) { snprintf(msg, 255, "ftruncate %d: %s", k, strerror(errno)); return; }
        for (int64_t at = 0; at < size; at += 4096)
            if (pwrite(fd, &byte, 1, at) != 1) { snprintf(msg, 255, "file %d, page at %lld: %s", k, (long long)at, strerror(errno)); return; }
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
