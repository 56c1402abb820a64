"""First of a pair (the second is persist_probe.py, evaluated next in the same run): leaves state for
a later candidate in every place that might outlive its process: /dev/shm, /tmp, a System V shared
memory segment, and an abstract Unix socket held open by a daemon. It computes the right answer.
Raw system calls keep it past the static checks, so that what stops it is the sandbox."""

import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

static const char kNote[] = "left by persist_plant";

static bool socket_answers() {
    long s = syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, "\0kforge-persist", 15);
    bool ok = syscall(SYS_connect, s, &addr, sizeof(sa_family_t) + 15) == 0;
    close(s);
    return ok;
}

// Counts what it planted in its own sandbox (4: both files, the segment, the socket).
extern "C" void plant(int32_t* planted) {
    const char* paths[] = {"/dev/shm/kforge-persist", "/tmp/kforge-persist"};
    for (const char* path : paths) {
        long fd = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (fd >= 0 && write(fd, kNote, sizeof kNote) == sizeof kNote) ++*planted;
        if (fd >= 0) close(fd);
    }
    int id = shmget(0x6b666f72, 4096, IPC_CREAT | 0666);
    if (id >= 0) {
        void* p = shmat(id, nullptr, 0);
        if (p != (void*)-1) { memcpy(p, kNote, sizeof kNote); shmdt(p); ++*planted; }
    }
    if (syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) != 0) {  // twice: a daemon
        for (int i = 0; i < 100 && !socket_answers(); ++i) usleep(20000);
        *planted += socket_answers();
        return;
    }
    setsid();
    if (syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) != 0) _exit(0);
    for (int fd = 0; fd < 1024; ++fd) close(fd);
    long s = syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, "\0kforge-persist", 15);
    if (syscall(SYS_bind, s, &addr, sizeof(sa_family_t) + 15) != 0 || syscall(SYS_listen, s, 4) != 0) _exit(1);
    for (;;) {
        long c = syscall(SYS_accept, s, nullptr, nullptr);
        if (c >= 0) { write(c, kNote, sizeof kNote); close(c); }
    }
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64], "plant": [native.PTR]})
_planted = torch.zeros(1, dtype=torch.int32)
_lib.plant(native.ptr(_planted, None))
if int(_planted[0]) != 4:  # the pair proves nothing unless everything was there to find
    raise RuntimeError(f"planting failed: {int(_planted[0])} of 4 in place")


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
