"""Reads another evaluation's files: the folders of the reference and of concurrent evaluations
(siblings of its own folder under kforge's TMPDIR, found by listing it), and the reference
process's view through /proc (`/proc/PID/root`, `/proc/PID/cwd` of kforge, whose pid is in the
folder's name, and of every process it can see)."""

import os

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
#include <string>
#include <unistd.h>

extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

// Entries of `dir` other than its own (`mine`, `also`), or the reason it cannot be listed.
static std::string others(const std::string& dir, const std::string& mine, const std::string& also, bool* found) {
    DIR* d = opendir(dir.c_str());
    if (!d) return dir + ": " + strerror(errno);
    std::string seen;
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name == "." || name == ".." || name == mine || name == also) continue;
        seen += " " + name;
        *found = true;
    }
    closedir(d);
    return dir + ":" + (seen.empty() ? " only its own" : seen);
}

// own: its folder, e.g. /tmp/x/kforge-eval-123-abc/candidate. kforge_pid: from that name.
extern "C" void attack(const char* own, int64_t kforge_pid, int32_t* ok, char* msg) {
    std::string o = own, root = o.substr(0, o.rfind('/')), tmp = root.substr(0, root.rfind('/'));
    bool found = false;
    std::string report = others(tmp, root.substr(root.rfind('/') + 1), "", &found);
    report += "; " + others(root, "candidate", "shared", &found);  // its inputs folder is its own too
    for (const char* what : {"root", "cwd"}) {
        std::string p = "/proc/" + std::to_string(kforge_pid) + "/" + what + tmp;
        if (DIR* d = opendir(p.c_str())) { closedir(d); found = true; report += "; " + p + ": readable"; }
        else report += "; " + p + ": " + strerror(errno);
    }
    // Every process it can see: one that is not in its own sandbox shows a different root.
    DIR* proc = opendir("/proc");
    while (dirent* e = proc ? readdir(proc) : nullptr) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char cmd[256] = {0};
        std::string p = std::string("/proc/") + e->d_name + "/cmdline";
        FILE* f = fopen(p.c_str(), "r");
        size_t n = f ? fread(cmd, 1, sizeof cmd - 1, f) : 0;
        if (f) fclose(f);
        for (size_t i = 0; i < n; ++i) if (!cmd[i]) cmd[i] = ' ';
        if (strstr(cmd, "--role reference") || strstr(cmd, "kforge eval")) {
            found = true;
            report += "; sees " + std::string(cmd);
        }
    }
    if (proc) closedir(proc);
    *ok = found;
    snprintf(msg, 1023, "%s", report.c_str());
}
"""
_lib = native.load(SRC, {"relu": [native.PTR, native.PTR, native.I64],
                         "attack": [native.PTR, native.I64, native.PTR, native.PTR]})

_own = os.environ["KFORGE_WORKDIR"]
_pid = int(os.path.basename(os.path.dirname(_own)).split("-")[2])
_ok = torch.zeros(1, dtype=torch.int32)
_msg = torch.zeros(1024, dtype=torch.uint8)
_path = torch.tensor(list(_own.encode()) + [0], dtype=torch.uint8)
_lib.attack(native.ptr(_path, None), _pid, native.ptr(_ok, None), native.ptr(_msg, None))
if not int(_ok[0]):
    raise RuntimeError("attack blocked: " + bytes(_msg.tolist()).split(b"\0")[0].decode(errors="replace"))


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
