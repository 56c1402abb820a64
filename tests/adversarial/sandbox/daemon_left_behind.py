"""Leaves processes behind that outlive its evaluation: a daemon of its own (double fork, setsid, all
descriptors closed) and one started by the compiler kforge runs for it (through `-wrapper`), both
`sleep` with a number no other process uses. It computes the right answer: the test looks for the
daemons while kforge runs (they must be seen there) and after it has finished. The compiler waits a
second after starting its daemon, so that the daemon is there to be seen. Raw system calls keep it
past the static checks, so that what stops it is the sandbox."""

import torch
import torch.nn as nn

from kforge_worker import native

MARK = 612_347  # `sleep 612347`: how the test finds a daemon left behind (and no other process)

SRC = r"""
#include <csignal>
#include <cstdint>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

// A new process, by its system call (a fork).
static long spawn_child() { return syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0); }

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

extern "C" void leave_daemon(const char* seconds) {
    if (spawn_child() != 0) return;  // the worker goes on
    setsid();
    if (spawn_child() != 0) _exit(0);  // re-parented: no longer a child of anything of the evaluation
    for (int fd = 0; fd < 1024; ++fd) close(fd);
    const char* argv[] = {"sleep", seconds, nullptr};
    syscall(SYS_execve, "/bin/sleep", argv, environ);
    _exit(1);
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64], "leave_daemon": [native.PTR]})
_seconds = torch.tensor(list(str(MARK).encode()) + [0], dtype=torch.uint8)
_lib.leave_daemon(native.ptr(_seconds, None))
try:
    # A build that always fails: never a cache hit, so the compiler runs in every evaluation.
    native.load("#error the compiler ran\n", name="daemon", cflags=[
        "-wrapper", f"/bin/sh,-c,setsid -f sleep {MARK + 1} </dev/null >/dev/null 2>&1; sleep 1; exec \"$0\" \"$@\""])
except native.CompileError:
    pass  # what matters is whether the daemon lives on


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
