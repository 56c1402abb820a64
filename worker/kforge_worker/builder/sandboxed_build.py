"""The trusted builder: compiles what a candidate asked for and installs it into the shared cache.

    python -m kforge_worker.builder.sandboxed_build

kforge (src/eval/build_broker.cc) runs this for one build, outside the candidate's sandbox, when a
candidate asks over its build channel for a library that is not in the cache yet. It reads one JSON
line on stdin and writes one JSON reply on fd 3:

    {"request": {"kind": "native", "source": ..., "cflags": [...], "ldflags": [...], "name": ...},
     "sandbox": [bwrap argv up to and including "--", or empty], "build_dir": fresh folder}
    {"request": {"kind": "load_inline", "params": {...load_inline's arguments...}}, ...}

This process computes the cache key itself, from the request (source, flags, compiler identity,
CPU, torch and Python versions, architectures, helper version): whatever the candidate claims about
keys is ignored. Only the compiler runs inside ``sandbox`` (no network, the toolchain read-only, only
``build_dir`` writable, an unprivileged uid). The result is read back, copied into a fresh file of
the cache owned by kforge and published with an atomic rename, so candidates (which see the cache
read-only) load exactly the build of the source they named, and nothing a compiler run left behind.
A load_inline build's folder (sources, build.ninja) is written here by torch's own load_inline
(inline_plan), and only ninja and what it runs go into ``sandbox``, which imports torch meanwhile to
load the library as load_inline would. A load_inline CUDA source is compiled against torch/types.h
first (cuda_header_choice), and as written where that does not build; nvcc runs its host and device
passes side by side (nvcc_lanes). A load_inline name is an identifier: it names a cache folder.
"""

import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from kforge_worker.builder.build_folders import BuildFailed, empty, publish

MAX_SOURCE_BYTES = 4 << 20
# What one evaluation may install into the shared cache (its builds that were not cache hits): one
# candidate's requests must not fill the disk (the cache as a whole has a budget too, build_store.py).
MAX_INSTALLS = 8
MAX_INSTALL_BYTES = 512 << 20
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_CXX_WITH_HEADERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kforge-g++")


def _install(data: bytes, path: str) -> None:
    """Writes ``data`` to ``path`` atomically, as a file of this (trusted) process, read-only to all."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".install-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _read_result(path: str, limit: int = 1 << 30) -> bytes:
    """Reads a file the sandboxed compiler wrote, refusing links and special files."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        raise BuildFailed(f"the build produced no {os.path.basename(path)}: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not st.st_mode & 0o170000 == 0o100000:
            raise BuildFailed(f"the build's {os.path.basename(path)} is not a regular file")
        if st.st_size > limit:
            raise BuildFailed(f"the build's {os.path.basename(path)} ({st.st_size >> 20} MiB) is larger than the "
                              f"evaluation's build quota has left ({limit >> 20} MiB)")
        return f.read()


def _run(argv: list, cwd: str, timeout: float, stdin: str = None, env: dict = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise BuildFailed(f"the build ran past {timeout:.0f} s") from None
    except OSError as e:
        raise BuildFailed(f"the compiler could not be started: {e}") from None


def _quota(req: dict) -> int:
    """The most bytes this build may install: what the evaluation's build quota has left (main puts
    kforge's quota in the request); raises BuildFailed where it is spent. Called once a build is known
    not to be a cache hit, which costs nothing."""
    quota = req.get("kforge_quota")
    if not isinstance(quota, _Quota):
        return 1 << 30
    quota.check()
    left = quota.bytes_left()
    return min(left, 1 << 30) if left is not None else 1 << 30


def _keep_within_budget(installed: str) -> None:
    """Evicts the least recently used entries of the shared cache past its budget (build_store)."""
    from kforge_kernels import native, inline_cache
    from kforge_worker.builder import build_store

    build_store.evict(native.cache_dir(), os.path.dirname(inline_cache.entry_dir("x")), build_store.budget_bytes(),
                      keep=(installed,))


class _Quota:
    """What the evaluation's builds installed so far, in a file kforge names in each request (in the
    worker's root, which no sandbox sees); without one, no per-evaluation quota."""

    def __init__(self, path):
        self.path = path if isinstance(path, str) and path else None
        self.installs, self.bytes = 0, 0
        if self.path and os.path.exists(self.path):
            with open(self.path) as f:
                spent = json.load(f)
            self.installs, self.bytes = int(spent["installs"]), int(spent["bytes"])

    def bytes_left(self):
        return max(0, MAX_INSTALL_BYTES - self.bytes) if self.path else None

    def check(self) -> None:
        if self.path and self.installs >= MAX_INSTALLS:
            raise BuildFailed(f"the evaluation's build quota is spent: {self.installs} libraries built, the most "
                              f"one evaluation may install into the shared cache")
        if self.path and self.bytes >= MAX_INSTALL_BYTES:
            raise BuildFailed(f"the evaluation's build quota is spent: {self.bytes >> 20} MiB installed, the most "
                              f"one evaluation may install into the shared cache")

    def spend(self, nbytes: int) -> None:
        if self.path:
            self.installs, self.bytes = self.installs + 1, self.bytes + nbytes
            _install(json.dumps({"installs": self.installs, "bytes": self.bytes}).encode(), self.path)


def _strings(value, what: str) -> list:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise BuildFailed(f"{what} must be a list of strings")
    return list(value)


def build_native(req: dict, sandbox: list, build_dir: str, timeout: float) -> dict:
    from kforge_kernels import native

    source = req.get("source")
    if not isinstance(source, str) or len(source.encode()) > MAX_SOURCE_BYTES:
        raise BuildFailed(f"the source must be a string of at most {MAX_SOURCE_BYTES} bytes")
    cflags = _strings(req.get("cflags", []), "cflags")
    ldflags = _strings(req.get("ldflags", []), "ldflags")
    name = req.get("name") or "kernel"
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        name = "kernel"
    cmd = native._compiler_cmd()
    root = native.cache_dir()
    key = native.cache_key(cmd, source, cflags, ldflags, root)
    lib_path = os.path.join(root, key + ".so")
    if os.path.exists(lib_path):
        return {"key": key, "path": lib_path, "hit": True, "log": ""}
    limit = _quota(req)
    src_name = name + ".cpp"
    with open(os.path.join(build_dir, src_name), "w", encoding="utf-8") as f:
        f.write(source)
    argv = cmd + native.BASE_FLAGS + cflags + [src_name, "-o", "lib.so"] + ldflags
    r = _run(sandbox + argv, build_dir, timeout)
    log = " ".join(argv) + "\n" + r.stdout + r.stderr
    if r.returncode != 0:
        first = next((ln for ln in (r.stdout + r.stderr).splitlines() if "error" in ln), "")
        raise BuildFailed(f"C++ compilation failed (exit {r.returncode}): {first.strip()}", log)
    lib = _read_result(os.path.join(build_dir, "lib.so"), limit)
    # Only the library: the source stays out of the shared cache, where a later candidate could read
    # back what this one wrote into it.
    _install(lib, lib_path)
    _keep_within_budget(lib_path)
    return {"key": key, "path": lib_path, "hit": False, "log": log, "bytes": len(lib)}


# The sandboxed half of a load_inline build (inline_plan wrote the folder): ninja starts first and
# torch is imported while the compilers run; then the library is loaded as load_inline loads it.
_NINJA_SCRIPT = """
import json, os, subprocess, sys
# Not the build folder (python -c's ""): the compilers write there before torch is imported.
sys.path[:] = [p for p in sys.path if p]
plan = json.loads(sys.stdin.read())
ninja = subprocess.Popen(plan["ninja"], stderr=subprocess.STDOUT)
from torch.utils import cpp_extension
if ninja.wait() != 0:
    sys.exit(f"Error building extension '{plan['name']}': ninja exited with status {ninja.returncode}")
cpp_extension._import_module_from_library(plan["name"], os.getcwd(), plan["python_module"])
"""


def _inline_environment(python: str, build_dir: str) -> dict:
    """The variables load_inline's build runs under: nvcc through nvcc_lanes (unless PYTORCH_NVCC
    names another), and where kforge keeps precompiled headers (build_pch), bin/kforge-g++ as the
    C++ compiler, running the real one, with the folder where the compiles leave their notes."""
    from torch.utils import cpp_extension

    from kforge_worker.builder import build_pch, nvcc_lanes, pch_builder

    env = {}
    if cpp_extension.CUDA_HOME and "PYTORCH_NVCC" not in os.environ:
        nvcc = os.path.join(cpp_extension.CUDA_HOME, "bin", "nvcc")
        env["PYTORCH_NVCC"] = shlex.join([python, nvcc_lanes.__file__, nvcc])
    if build_pch.root():
        env.update(KFORGE_REAL_CXX=os.environ.get("CXX") or "c++", KFORGE_PCH_PYTHON=python, CXX=_CXX_WITH_HEADERS,
                   KFORGE_PCH_NOTES=os.path.join(os.path.abspath(build_dir), pch_builder.NOTES))
    return env


def _lean_folder():
    """lean_aten's folder for this torch, made on first use; None without a folder of precompiled
    headers (it lives there) or where it cannot be made (the build goes on without it)."""
    from kforge_worker.builder import lean_aten

    try:
        return lean_aten.folder()
    except (OSError, ValueError):
        return None


def build_load_inline(req: dict, sandbox: list, build_dir: str, timeout: float) -> dict:
    from kforge_kernels import inline_cache
    from kforge_worker.builder import cuda_header_choice, inline_plan, pch_builder
    from kforge_worker.common import gpu_env

    gpu_env.apply()  # the architectures the worker builds for (part of the key)

    params = req.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        raise BuildFailed("params must be load_inline's arguments, with a name")
    if not _IDENTIFIER.match(params["name"]):  # a folder of the cache, and the module's name
        raise BuildFailed(f"load_inline's name must be an identifier (letters, digits, _): {params['name'][:80]!r}")
    if len(json.dumps(params).encode()) > MAX_SOURCE_BYTES:
        raise BuildFailed(f"the sources must be at most {MAX_SOURCE_BYTES} bytes")
    allowed = inline_cache.BUILD_ARGUMENTS
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise BuildFailed(f"load_inline arguments not accepted here: {unknown}")
    key = inline_cache.cache_key(params)
    name = inline_cache.keyed_name(params["name"], key)
    final_dir = inline_cache.entry_dir(name)
    if inline_cache.complete(final_dir, name):
        return {"key": key, "path": final_dir, "name": name, "hit": True, "log": ""}
    limit = _quota(req)
    run_params = dict(params, name=name, build_directory=build_dir, verbose=True)
    # The sandbox shows folders at their real paths; the interpreter keeps its name (its venv).
    python = os.path.join(os.path.realpath(os.path.dirname(sys.executable)), os.path.basename(sys.executable))
    lean = _lean_folder() if params.get("cuda_sources") else None
    light = cuda_header_choice.light_params(run_params, lean)
    attempts = ([("torch/types.h", light)] if light else []) + [("torch/extension.h", run_params)]
    env = _inline_environment(python, build_dir)
    deadline = time.monotonic() + timeout
    for number, (headers, attempt) in enumerate(attempts):
        if number:  # nothing the first attempt's compiler left there reaches the second one's interpreter
            empty(build_dir)
        try:
            plan = inline_plan.write(attempt, env)
        except Exception as e:  # load_inline refused its arguments: the candidate's, in either attempt
            raise BuildFailed(f"load_inline build failed: {type(e).__name__}: {e}") from None
        r = _run(sandbox + [python, "-c", _NINJA_SCRIPT], build_dir, max(1.0, deadline - time.monotonic()),
                 json.dumps(dataclasses.asdict(plan)), dict(os.environ, **env))
        if r.returncode == 0:
            break
    # Only the build as written speaks for the source: the lighter attempt's errors are not the candidate's.
    log = r.stdout + r.stderr
    if r.returncode != 0:
        first = next((ln for ln in log.splitlines() if "error" in ln.lower()), "")
        raise BuildFailed(f"load_inline build failed: {first.strip()}", log)
    lib = _read_result(os.path.join(build_dir, name + ".so"), limit)
    staging = tempfile.mkdtemp(dir=os.path.dirname(final_dir), prefix=".install-")
    try:
        with open(os.path.join(staging, name + ".so"), "wb") as f:
            f.write(lib)
        open(os.path.join(staging, inline_cache.MARKER), "w").close()
        publish(staging, final_dir, lambda: inline_cache.complete(final_dir, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _keep_within_budget(final_dir)
    precompiled, made = pch_builder.make_wanted(build_dir, _run, sandbox, python,
                                                max(1.0, min(300.0, deadline - time.monotonic())))
    reply = {"key": key, "path": final_dir, "name": name, "hit": False, "log": log + made, "bytes": len(lib)}
    if precompiled:
        reply["precompiled_headers"] = precompiled
    if params.get("cuda_sources"):
        reply["cuda_headers"] = headers
        if lean and attempt is light:
            reply["aten_operators"] = "named"  # lean_aten: those torch's headers and the source name
    return reply


BUILDERS = {"native": build_native, "load_inline": build_load_inline}


def _warm() -> None:
    """What a load_inline build imports, imported before its request arrives (``--warm``: kforge
    starts such a builder beside a load_inline candidate's worker, src/eval/build_broker.cc)."""
    from torch.utils import cpp_extension  # noqa: F401  (torch, seconds of a cold build)

    from kforge_kernels import inline_cache  # noqa: F401
    from kforge_worker.builder import cuda_header_choice, inline_plan, lean_aten, pch_builder  # noqa: F401

    if _lean_folder():  # made once per torch install
        lean_aten.operators(lean_aten.torch_include())  # read once per builder


def main() -> int:
    from kforge_worker.common import keyrings

    keyrings.refuse()  # inherited by the compilers it runs for a candidate (keyrings.py)
    reply_fd = int(os.environ.get("KFORGE_RESPONSE_FD", "3"))
    warm = "--warm" in sys.argv[1:]
    if warm:
        _warm()
    line = sys.stdin.readline()
    if not line:  # kforge stopped a builder that no request came to
        return 0
    try:
        msg = json.loads(line)
        req = dict(msg["request"])
        quota = _Quota(msg.get("quota_file"))
        req["kforge_quota"] = quota  # kforge's, over whatever the candidate's request held
        builder = BUILDERS.get(req.get("kind"))
        if builder is None:
            raise BuildFailed(f"unknown build kind {req.get('kind')!r}")
        reply = dict(builder(req, list(msg.get("sandbox") or []), msg["build_dir"], float(msg.get("timeout", 600))),
                     ok=True, warm_builder=warm)
        if not reply.get("hit"):
            quota.spend(int(reply.get("bytes", 0)))
    except BuildFailed as e:
        reply = {"ok": False, "error": str(e), "log": e.log[-200000:]}
    except Exception as e:  # a malformed request: the candidate sent it
        reply = {"ok": False, "error": f"bad build request: {type(e).__name__}: {e}", "log": ""}
    with os.fdopen(reply_fd, "w") as out:
        out.write(json.dumps(reply) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
