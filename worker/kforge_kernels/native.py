"""Fast compile path of the ``cpu`` target: builds plain C++ with g++ and calls it through ctypes.

    import ctypes
    from kforge_kernels import native
    lib = native.load(SRC, functions={"relu": [native.PTR, native.PTR, native.I64]})
    out = torch.empty_like(x)
    lib.relu(native.ptr(x), native.ptr(out), x.numel())

The source is compiled with ``$CXX -O3 -march=native -fopenmp -shared -fPIC`` (``$CXX`` defaults to
g++) into a shared library that is cached across processes under ``$KFORGE_BUILD_CACHE/native``
(default ``~/.cache/kforge/build``). The cache key covers the source, the flags, the compiler's
identity (its ``--version`` output), the host CPU (because of -march=native) and this helper's
version, so a cached load runs no compiler at all.

Inside kforge's candidate sandbox the cache is read-only: a miss is sent over the build channel to
kforge's trusted builder (kforge_worker.builder.sandboxed_build), which computes the key itself, compiles in
a sandbox of its own and installs the library; this process then loads it from the cache. Copied
into a standalone file (no kforge around), it builds into a private temporary folder of its own
process and never loads a library from a folder another program could have written.

Self-contained on purpose (stdlib + torch + ctypes): it may be copied verbatim into standalone files.
"""

import ctypes
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
import threading
import time

try:
    from kforge_kernels.errors import CompileError
except ImportError:  # inlined into a standalone file
    class CompileError(Exception):
        """The kernel source failed to build. ``log`` holds the compiler's full output."""

        def __init__(self, message, log=""):
            super().__init__(message)
            self.log = log

try:
    from kforge_kernels import buildinfo as _buildinfo
    from kforge_kernels import build_client as _build_client
    _record = _buildinfo.record
except ImportError:  # inlined into a standalone file: nobody collects build events, no shared cache
    _build_client = None

    def _record(path, key, cache_hit, seconds, **extra):
        pass

__all__ = ["load", "ptr", "CompileError", "PTR", "I32", "I64", "F32", "F64", "BASE_FLAGS"]

# Bump when the build recipe changes so old cache entries are not reused.
HELPER_VERSION = "1"

BASE_FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c++17"]

# Shorthands for ctypes argument types in ``load(functions=...)``.
PTR = ctypes.c_void_p
I32 = ctypes.c_int32
I64 = ctypes.c_int64
F32 = ctypes.c_float
F64 = ctypes.c_double

_lock = threading.Lock()
_loaded = {}  # library path -> CDLL, so repeated loads in one process reuse the handle
_compiler_ids = {}


_private_root = []  # standalone: this process's own build folder, made on first use


def cache_dir() -> str:
    if _build_client is None or __name__.startswith("kforge_standalone."):
        if not _private_root:
            import atexit

            _private_root.append(tempfile.mkdtemp(prefix="kforge-native-"))
            atexit.register(shutil.rmtree, _private_root[0], True)
        return _private_root[0]
    root = os.environ.get("KFORGE_BUILD_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kforge", "build")
    return os.path.join(root, "native")


def _compiler_cmd() -> list:
    cmd = shlex.split(os.environ.get("CXX") or "g++")
    exe = shutil.which(cmd[0])
    if exe is None:
        raise CompileError(f"C++ compiler not found: {cmd[0]!r} (set $CXX)", "")
    return [exe] + cmd[1:]


def _atomic_write(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)  # read by candidates, which run under another uid
    os.replace(tmp, path)


def _compiler_identity(cmd: list, root: str) -> str:
    """``$CXX --version`` output, memoised on disk by the executable's path and stat so that cached
    loads in new processes do not run the compiler even for this query."""
    real = os.path.realpath(cmd[0])
    st = os.stat(real)
    stamp = json.dumps([cmd, real, st.st_size, st.st_mtime_ns, st.st_ino])
    if stamp in _compiler_ids:
        return _compiler_ids[stamp]
    memo = os.path.join(root, "compilers", hashlib.sha256(stamp.encode()).hexdigest()[:24] + ".txt")
    try:
        with open(memo, encoding="utf-8") as f:
            ident = f.read()
    except OSError:  # not there yet (or unreadable): ask the compiler
        try:
            r = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CompileError(f"cannot run C++ compiler {cmd[0]}: {e}", str(e)) from e
        ident = stamp + "\n" + r.stdout + r.stderr
        try:
            os.makedirs(os.path.dirname(memo), exist_ok=True)
            _atomic_write(memo, ident.encode())
        except OSError:  # a read-only cache (inside the candidate's sandbox): the builder writes it
            pass
    _compiler_ids[stamp] = ident
    return ident


def _host_cpu() -> str:
    """The CPU model and feature flags: what -march=native compiles for."""
    model = flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                k, _, v = line.partition(":")
                k = k.strip()
                if k in ("model name", "Processor", "cpu model") and not model:
                    model = v.strip()
                elif k in ("flags", "Features") and not flags:
                    flags = v.strip()
                if model and flags:
                    break
    except OSError:
        pass
    return f"{platform.machine()}|{model}|{flags}"


def cache_key(cmd: list, source: str, cflags: list, ldflags: list, root: str) -> str:
    """What names a build: source, flags, the compiler's identity, the host CPU, this helper's version."""
    key_data = json.dumps({
        "v": HELPER_VERSION, "src": source, "flags": BASE_FLAGS + list(cflags), "ldflags": list(ldflags),
        "compiler": _compiler_identity(cmd, root), "cpu": _host_cpu(),
    })
    return hashlib.sha256(key_data.encode()).hexdigest()[:32]


def load(source: str, functions: dict = None, *, name: str = "kernel", cflags=(), ldflags=()):
    """Compiles C++ ``source`` (or reuses the cached build) and returns the loaded ``ctypes.CDLL``.

    ``functions`` maps each ``extern "C"`` function to call to its list of ctypes argument types
    (``PTR``, ``I64``, ``F32``, ...); they get ``argtypes`` set and ``restype`` None (void), so Python
    ints and floats convert correctly. ``name`` only names the source file in compiler messages.
    ``cflags``/``ldflags`` are appended to the fixed flags. Raises ``CompileError`` on failure.
    """
    t0 = time.perf_counter()
    root = cache_dir()
    cmd = _compiler_cmd()
    key = cache_key(cmd, source, list(cflags), list(ldflags), root)
    lib_path = os.path.join(root, key + ".so")

    with _lock:
        lib = _loaded.get(lib_path)
        hit = lib is not None or os.path.exists(lib_path)
        if not hit:
            if _build_client is not None and _build_client.available():
                reply = _build_client.request({"kind": "native", "source": source, "cflags": list(cflags),
                                               "ldflags": list(ldflags), "name": name})
                if not reply.get("ok"):
                    raise CompileError(reply.get("error", "the build failed"), reply.get("log", ""))
                lib_path = reply["path"]
            else:
                os.makedirs(root, exist_ok=True)
                _build(cmd, BASE_FLAGS + list(cflags), list(ldflags), source, name, root, lib_path)
        if lib is None:
            try:
                lib = ctypes.CDLL(lib_path)
            except OSError as e:
                raise CompileError(f"built library failed to load: {e}", str(e)) from e
            _loaded[lib_path] = lib
    _record("native", key, hit, time.perf_counter() - t0)

    for fname, argtypes in (functions or {}).items():
        try:
            fn = getattr(lib, fname)
        except AttributeError:
            raise CompileError(
                f"function {fname!r} not found in the built library; declare it extern \"C\" "
                f"(C++ mangles names otherwise)", "") from None
        fn.argtypes = list(argtypes)
        fn.restype = None
    return lib


def _build(cmd, flags, ldflags, source, name, root, lib_path) -> None:
    # Each build gets its own temp dir inside the cache (same filesystem), and the finished library is
    # published with an atomic rename: concurrent builds of one key never see a half-written file.
    tmp = tempfile.mkdtemp(dir=root, prefix=".build-")
    try:
        src_name = name + ".cpp"
        with open(os.path.join(tmp, src_name), "w", encoding="utf-8") as f:
            f.write(source)
        argv = cmd + flags + [src_name, "-o", "lib.so"] + ldflags
        try:
            r = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CompileError(f"C++ compiler failed to run: {e}", str(e)) from e
        log = shlex.join(argv) + "\n" + r.stdout + r.stderr
        if r.returncode != 0:
            first = next((ln for ln in (r.stdout + r.stderr).splitlines() if "error" in ln), "")
            raise CompileError(f"C++ compilation failed (exit {r.returncode}): {first.strip()}", log)
        # Keep the source next to the library, for reading errors and profiles later.
        os.replace(os.path.join(tmp, src_name), lib_path[:-3] + ".cpp")
        os.replace(os.path.join(tmp, "lib.so"), lib_path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class _TensorPtr(ctypes.c_void_p):
    """A data pointer that keeps its tensor alive while the pointer object lives (i.e. for the call)."""
    __slots__ = ("tensor",)


def ptr(t, dtype="float32") -> ctypes.c_void_p:
    """The data pointer of a contiguous CPU tensor, checked: raises on a non-contiguous tensor, a
    tensor on another device, or a dtype other than ``dtype`` (pass ``dtype=None`` to accept any)."""
    import torch  # here, not at the top: kforge's builder imports this module without torch

    if dtype == "float32":
        dtype = torch.float32
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"native.ptr expects a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"native.ptr: tensor is on {t.device}, kernels here read CPU memory")
    if dtype is not None and t.dtype != dtype:
        raise TypeError(f"native.ptr: tensor has dtype {t.dtype}, kernel expects {dtype} (convert with .to({dtype}))")
    if not t.is_contiguous():
        raise ValueError(
            f"native.ptr: tensor of shape {tuple(t.shape)} with strides {t.stride()} is not contiguous; "
            f"call .contiguous() first and keep the result in a variable")
    p = _TensorPtr(t.data_ptr())
    p.tensor = t
    return p
