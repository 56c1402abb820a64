"""Helper of the ``hip`` target: HIP C++ kernels built with ``hipcc --genco`` to an AMD GPU code object,
loaded with the HIP runtime (``libamdhip64``) and launched on torch tensors (a ROCm build of torch,
where AMD GPUs are the ``cuda`` device).

    from kforge_kernels import hip
    mod = hip.build(SRC)                              # hipcc, cached on disk
    out = torch.empty_like(x)
    mod.launch("relu", (blocks,), (256,), x, out, x.numel())

Kernels are ``extern "C" __global__`` functions. Arguments: tensors become device pointers; Python
ints are passed as 64-bit integers and floats as 32-bit floats, so declare scalar parameters
``long`` (``int64_t``) and ``float``. Launches go to torch's current stream.

Architecture: ``$KFORGE_HIP_ARCH`` (default ``gfx90a``, the MI200 series). The code object is
cached under ``$KFORGE_LAUNCH_CACHE/hip`` (private to the candidate in kforge's sandbox) or else
``$KFORGE_BUILD_CACHE/hip`` keyed by the source, the options, the architecture and
``hipcc``'s identity. With ``$KFORGE_COMPILE_ONLY=1`` (``kforge eval --compile-only``) the code object
is built and checked to hold code for the architecture, and never loaded, so no AMD GPU is needed.

Self-contained on purpose (stdlib + torch + ctypes): it may be copied into standalone files.
"""

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import time

import torch

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
    _record = _buildinfo.record
except ImportError:  # inlined into a standalone file: nobody collects build events
    def _record(path, key, cache_hit, seconds, **extra):
        pass

__all__ = ["build", "Module", "CompileError"]

HELPER_VERSION = "1"
# Options that would trade accuracy for speed beyond the fp32 tolerance.
FORBIDDEN_OPTIONS = ("-ffast-math", "-funsafe-math-optimizations", "-ffinite-math-only", "-fgpu-flush-denormals-to-zero")


def _compile_only() -> bool:
    return os.environ.get("KFORGE_COMPILE_ONLY", "") not in ("", "0")


def _cache_dir() -> str:
    # A candidate builds in its own process, so its code objects go to its private cache
    # (KFORGE_LAUNCH_CACHE, deleted with its sandbox): the shared cache is written by kforge only.
    root = (os.environ.get("KFORGE_LAUNCH_CACHE") or os.environ.get("KFORGE_BUILD_CACHE")
            or os.path.join(os.path.expanduser("~"), ".cache", "kforge", "build"))
    return os.path.join(root, "hip")


def _hipcc() -> str:
    path = shutil.which("hipcc")
    if not path:
        raise CompileError("hipcc not found on PATH (Debian: apt-get install hipcc; ROCm: /opt/rocm/bin)")
    return path


def _toolchain_id(hipcc: str) -> str:
    st = os.stat(hipcc)
    return f"{os.path.realpath(hipcc)}:{st.st_size}:{int(st.st_mtime)}"


def _arch() -> str:
    return os.environ.get("KFORGE_HIP_ARCH") or "gfx90a"


class _Runtime:
    """The HIP runtime entry points this helper uses, loaded on first launch."""

    def __init__(self):
        names = ["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so"]
        last = None
        for name in names:
            try:
                self.lib = ctypes.CDLL(name)
                break
            except OSError as e:
                last = e
        else:
            raise RuntimeError(f"HIP runtime (libamdhip64) not found: {last}")
        self.lib.hipGetErrorString.restype = ctypes.c_char_p

    def check(self, code: int, what: str):
        if code != 0:
            raise RuntimeError(f"{what} failed: {self.lib.hipGetErrorString(code).decode()} ({code})")


_runtime = None


class Module:
    """A built code object; ``launch`` loads it on first use."""

    def __init__(self, path: str, arch: str):
        self.path, self.arch = path, arch
        self._module = None
        self._functions = {}

    def _function(self, name: str):
        global _runtime
        if _compile_only():
            raise RuntimeError("compile-only mode (KFORGE_COMPILE_ONLY=1): code objects are built but not launched")
        if _runtime is None:
            _runtime = _Runtime()
        rt = _runtime
        if self._module is None:
            with open(self.path, "rb") as f:
                self._image = f.read()
            module = ctypes.c_void_p()
            rt.check(rt.lib.hipModuleLoadData(ctypes.byref(module), self._image), "hipModuleLoadData")
            self._module = module
        if name not in self._functions:
            fn = ctypes.c_void_p()
            rt.check(rt.lib.hipModuleGetFunction(ctypes.byref(fn), self._module, name.encode()),
                     f"hipModuleGetFunction({name})")
            self._functions[name] = fn
        return self._functions[name]

    def launch(self, name: str, grid, block, *args, shared_bytes: int = 0):
        """Launches kernel ``name`` with ``grid`` blocks of ``block`` threads (1 to 3 values each)."""
        fn = self._function(name)
        grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        block = tuple(int(b) for b in block) + (1,) * (3 - len(block))
        values = []
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                if a.device.type != "cuda" or not a.is_contiguous():
                    raise ValueError(f"argument {i}: tensors must be contiguous and on the GPU")
                values.append(ctypes.c_void_p(a.data_ptr()))
            elif isinstance(a, bool) or not isinstance(a, (int, float)):
                raise TypeError(f"argument {i}: expected a tensor, int or float, got {type(a).__name__}")
            elif isinstance(a, int):
                values.append(ctypes.c_int64(a))
            else:
                values.append(ctypes.c_float(a))
        params = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        _runtime.check(_runtime.lib.hipModuleLaunchKernel(fn, *grid, *block, shared_bytes, stream, params, None),
                       f"hipModuleLaunchKernel({name})")


def _holds_arch(path: str, arch: str) -> bool:
    """Whether the offload bundle hipcc wrote holds code for ``arch`` (its entry names the target)."""
    with open(path, "rb") as f:
        data = f.read()
    return data.startswith(b"__CLANG_OFFLOAD_BUNDLE__") and f"amdgcn-amd-amdhsa--{arch}".encode() in data


_modules = {}


def build(src: str, options=()) -> Module:
    """Builds ``src`` (HIP C++) to a code object for ``$KFORGE_HIP_ARCH``; cached across processes."""
    options = list(options)
    bad = [o for o in options if o in FORBIDDEN_OPTIONS]
    if bad:
        raise CompileError(f"options not allowed (they break the accuracy check): {' '.join(bad)}")
    hipcc, arch = _hipcc(), _arch()
    key = hashlib.sha256("\0".join([HELPER_VERSION, _toolchain_id(hipcc), arch, *options, src]).encode()).hexdigest()[:24]
    if key in _modules:
        return _modules[key]
    cache = _cache_dir()
    target = os.path.join(cache, f"{key}.hsaco")
    start = time.perf_counter()
    hit = os.path.exists(target)
    if not hit:
        os.makedirs(cache, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="kforge-hip-") as tmp:
            source = os.path.join(tmp, "kernel.hip")
            out = os.path.join(tmp, "kernel.hsaco")
            with open(source, "w") as f:
                f.write(src)
            cmd = [hipcc, "--genco", f"--offload-arch={arch}", "-O3", *options, source, "-o", out]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
            if proc.returncode != 0 or not os.path.exists(out):
                log = (proc.stdout + proc.stderr).replace(tmp + os.sep, "")
                first = next((line for line in log.splitlines() if "error" in line), log.strip()[:200])
                raise CompileError(f"hipcc failed: {first}", log=log)
            if not _holds_arch(out, arch):
                raise CompileError(f"hipcc wrote no code object for {arch}")
            published = f"{target}.{os.getpid()}.tmp"
            shutil.copyfile(out, published)
            os.replace(published, target)  # atomic: concurrent builds of one key never collide
    _record("hip", key, hit, time.perf_counter() - start, arch=arch)
    _modules[key] = Module(target, arch)
    return _modules[key]
