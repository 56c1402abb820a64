"""Fast compile path of the ``cuda`` target: CUDA C++ kernels built to a cubin with NVRTC (or
``nvcc -cubin``), loaded with the CUDA driver API and launched on torch tensors.

    from kforge_kernels import cuda
    mod = cuda.compile(SRC)                        # NVRTC, cached on disk: ~0.3-1 s cold, ~ms cached
    out = torch.empty_like(x)
    mod.scale_relu(grid=(blocks,), block=(256,), args=(x, out, x.numel(), 2.0))

Kernels are ``extern "C" __global__`` functions (C++ mangles other names; templates work through
``name_expressions``). Scalar arguments are converted to the parameter types declared in the source
(``int`` -> int32, ``int64_t``/``long long`` -> int64, ``float`` -> float32, ...); tensor arguments
become device pointers and are checked against the pointer's element type, device and contiguity.
Launches go to torch's current stream, so they order with torch's own work and CUDA-event timers.

The cubin is cached under ``$KFORGE_LAUNCH_CACHE/cuda`` (inside kforge's candidate sandbox: private to
the candidate, deleted with it) or else ``$KFORGE_BUILD_CACHE/cuda`` (default ``~/.cache/kforge/build``), keyed by the source, the options, the GPU architecture and the
toolchain's identity (NVRTC version and library, or ``nvcc --version``), so a cached load runs no
compiler. Builds publish with an atomic rename: concurrent builds of one key never collide.

Architecture: ``$KFORGE_CUDA_ARCH`` (default ``sm_90a``, the H100/H200 with wgmma and setmaxnreg);
``sm_80``, ``sm_89``, ``90a``, ``compute_90`` are accepted spellings. With ``$KFORGE_COMPILE_ONLY=1``
(``kforge eval --compile-only``) modules are built but never loaded, so no GPU is needed.

Self-contained on purpose (stdlib + torch + ctypes): it may be copied verbatim into standalone files.
"""

import ctypes
import glob
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
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

__all__ = ["compile", "Module", "Kernel", "CompileError", "CudaError", "arch", "cache_dir", "BASE_OPTIONS"]

# Bump when the build recipe changes so old cache entries are not reused.
HELPER_VERSION = "1"
DEFAULT_ARCH = "sm_90a"
# Always-on options. No fast-math by default: it breaks the fp32 accuracy check on exp/div/sqrt.
BASE_OPTIONS = ["-std=c++17", "-lineinfo"]


class CudaError(RuntimeError):
    """A CUDA driver call failed (module load, launch). The message names the call and the error."""


_lock = threading.Lock()
_modules = {}  # cache key -> Module, so repeated compiles in one process share loaded code
_ids = {}  # memoised toolchain identities


# -- architecture and cache ---------------------------------------------------------------------
def arch() -> str:
    """The target architecture as ``sm_XY[a]``, from ``$KFORGE_CUDA_ARCH`` (default sm_90a)."""
    return normalize_arch(os.environ.get("KFORGE_CUDA_ARCH") or DEFAULT_ARCH)


def normalize_arch(text: str) -> str:
    m = re.fullmatch(r"(?:sm_|compute_)?(\d)\.?(\d+)([af]?)", text.strip())
    if not m:
        raise ValueError(f"KFORGE_CUDA_ARCH={text!r}: expected a form like sm_90a, sm_80, 90a or 8.9")
    return f"sm_{m.group(1)}{m.group(2)}{m.group(3)}"


def torch_arch_list(sm: str) -> str:
    """sm_90a -> '9.0a', the spelling TORCH_CUDA_ARCH_LIST (load_inline) uses."""
    m = re.fullmatch(r"sm_(\d)(\d+)([af]?)", sm)
    return f"{m.group(1)}.{m.group(2)}{m.group(3)}"


_private_root = []  # the standalone file: a build folder of this process's own, made on first use


def cache_dir() -> str:
    if __name__.startswith("kforge_standalone."):
        # Without kforge around, never load a cubin from a folder another program could have written.
        if not _private_root:
            import atexit

            _private_root.append(tempfile.mkdtemp(prefix="kforge-cuda-"))
            atexit.register(shutil.rmtree, _private_root[0], True)
        return _private_root[0]
    # A candidate builds in its own process, so its cubins go to its private cache (KFORGE_LAUNCH_CACHE,
    # deleted with its sandbox): a cache shared with other candidates must be written by kforge only.
    root = (os.environ.get("KFORGE_LAUNCH_CACHE") or os.environ.get("KFORGE_BUILD_CACHE")
            or os.path.join(os.path.expanduser("~"), ".cache", "kforge", "build"))
    return os.path.join(root, "cuda")


def compile_only() -> bool:
    return os.environ.get("KFORGE_COMPILE_ONLY", "") not in ("", "0")


def _atomic_write(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)  # read by candidates, which run under another uid
    os.replace(tmp, path)


def _file_stamp(path: str) -> list:
    real = os.path.realpath(path)
    st = os.stat(real)
    return [real, st.st_size, st.st_mtime_ns]


# -- toolchains ---------------------------------------------------------------------------------
def _cuda_home() -> str:
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return os.environ[var]
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return "/usr/local/cuda"


def _nvidia_wheel_dirs() -> list:
    try:
        import nvidia  # namespace package of NVIDIA's pip wheels (nvidia-cuda-nvrtc, ...)
    except ImportError:
        return []
    return list(getattr(nvidia, "__path__", []))


class _Nvrtc:
    """libnvrtc through ctypes: the one from NVIDIA's wheel that torch ships with, else the toolkit's."""

    def __init__(self):
        major = (torch.version.cuda or "13").split(".")[0]
        candidates = [os.environ["KFORGE_NVRTC_LIB"]] if os.environ.get("KFORGE_NVRTC_LIB") else []
        for base in _nvidia_wheel_dirs():
            candidates += sorted(glob.glob(os.path.join(base, f"cu{major}", "lib", f"libnvrtc.so.{major}*")))
            candidates += sorted(glob.glob(os.path.join(base, "cuda_nvrtc", "lib", f"libnvrtc.so.{major}*")))
        for lib in ("lib64", os.path.join("targets", "x86_64-linux", "lib")):
            candidates += sorted(glob.glob(os.path.join(_cuda_home(), lib, f"libnvrtc.so.{major}*")))
        candidates += [f"libnvrtc.so.{major}", "libnvrtc.so"]
        errors = []
        for path in candidates:
            if "alt" in os.path.basename(path) or "builtins" in os.path.basename(path):
                continue
            try:
                self.lib = ctypes.CDLL(path)
                self.path = path
                break
            except OSError as e:
                errors.append(f"{path}: {e}")
        else:
            raise CompileError("NVRTC (libnvrtc) not found; install nvidia-cuda-nvrtc or set KFORGE_NVRTC_LIB",
                               "\n".join(errors))
        a, b = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(a), ctypes.byref(b))
        self.version = f"{a.value}.{b.value}"
        self.lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        loaded = self._loaded_path()
        self.identity = json.dumps(["nvrtc", self.version] + _file_stamp(loaded or path))

    def _loaded_path(self):
        # The file the dynamic loader actually picked (a bare soname resolves anywhere on the path).
        try:
            with open("/proc/self/maps") as f:
                for line in f:
                    if "libnvrtc.so" in line and "builtins" not in line:
                        return line.split()[-1]
        except OSError:
            pass
        return None

    def check(self, code: int, what: str) -> None:
        if code != 0:
            raise CompileError(f"NVRTC {what} failed: {self.lib.nvrtcGetErrorString(code).decode()}", "")

    def include_dirs(self) -> list:
        """Headers beyond NVRTC's built-ins (cuda_fp16.h, cooperative_groups, cuda/barrier ...)."""
        dirs = [os.path.join(base, f"cu{self.version.split('.')[0]}", "include") for base in _nvidia_wheel_dirs()]
        dirs.append(os.path.join(_cuda_home(), "include"))
        return [d for d in dirs if os.path.isfile(os.path.join(d, "cuda_fp16.h"))][:1]

    def compile(self, source: str, name: str, options: list, name_expressions: list):
        lib = self.lib
        prog = ctypes.c_void_p()
        self.check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), (name + ".cu").encode(), 0, None, None),
                   "nvrtcCreateProgram")
        try:
            for expr in name_expressions:
                self.check(lib.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression")
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            code = lib.nvrtcCompileProgram(prog, len(options), opts)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, buf)
            log = buf.value.decode(errors="replace")
            if code != 0:
                first = next((ln for ln in log.splitlines() if "error" in ln), log.strip()[:200])
                raise CompileError(f"CUDA compilation failed (NVRTC): {first.strip()}",
                                   "nvrtc " + shlex.join(options) + "\n" + log)
            self.check(lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
            if size.value == 0:
                raise CompileError(f"NVRTC produced no cubin for {options}: the architecture must be a real "
                                   f"sm_XY, not compute_XY", log)
            cubin = ctypes.create_string_buffer(size.value)
            self.check(lib.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            lowered = {}
            for expr in name_expressions:
                out = ctypes.c_char_p()
                self.check(lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(out)), "nvrtcGetLoweredName")
                lowered[expr] = out.value.decode()
            return cubin.raw, lowered, log
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


_nvrtc = None


def _get_nvrtc() -> _Nvrtc:
    global _nvrtc
    if _nvrtc is None:
        _nvrtc = _Nvrtc()
    return _nvrtc


def _nvcc_path() -> str:
    nvcc = shutil.which("nvcc") or os.path.join(_cuda_home(), "bin", "nvcc")
    if not os.path.exists(nvcc):
        raise CompileError("nvcc not found: put the CUDA toolkit's bin/ on PATH or set CUDA_HOME", "")
    return nvcc


def _nvcc_identity(nvcc: str) -> str:
    """``nvcc --version`` memoised on disk by the executable's stat, so cached loads run no nvcc."""
    stamp = json.dumps(_file_stamp(nvcc))
    if stamp in _ids:
        return _ids[stamp]
    memo = os.path.join(cache_dir(), "toolchains", hashlib.sha256(stamp.encode()).hexdigest()[:24] + ".txt")
    try:
        with open(memo, encoding="utf-8") as f:
            ident = f.read()
    except FileNotFoundError:
        try:
            r = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CompileError(f"cannot run nvcc: {e}", str(e)) from e
        ident = stamp + "\n" + r.stdout + r.stderr
        os.makedirs(os.path.dirname(memo), exist_ok=True)
        _atomic_write(memo, ident.encode())
    _ids[stamp] = ident
    return ident


def _gencode(sm: str) -> str:
    # The -gencode form: `-arch=sm_90a` also runs a plain compute_90 pass that rejects wgmma.
    return f"-gencode=arch=compute_{sm[3:]},code={sm}"


def _nvcc_build(source: str, name: str, options: list) -> tuple:
    nvcc = _nvcc_path()
    tmp = tempfile.mkdtemp(dir=cache_dir(), prefix=".nvcc-")
    try:
        with open(os.path.join(tmp, name + ".cu"), "w", encoding="utf-8") as f:
            f.write(source)
        argv = [nvcc, "-cubin", "-O3"] + options + [name + ".cu", "-o", "kernel.cubin"]
        try:
            r = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CompileError(f"nvcc failed to run: {e}", str(e)) from e
        log = shlex.join(argv) + "\n" + r.stdout + r.stderr
        if r.returncode != 0:
            first = next((ln for ln in (r.stdout + r.stderr).splitlines() if "error" in ln), "")
            raise CompileError(f"CUDA compilation failed (nvcc, exit {r.returncode}): {first.strip()}", log)
        with open(os.path.join(tmp, "kernel.cubin"), "rb") as f:
            return f.read(), {}, r.stdout + r.stderr
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- compile ------------------------------------------------------------------------------------
def compile(source: str, *, name: str = "kernel", options=(), backend: str = "nvrtc", name_expressions=(),
            arch_override: str = None) -> "Module":
    """Builds CUDA C++ ``source`` to a cubin (or reuses the cached one) and returns a ``Module``.

    ``backend``: "nvrtc" (default, in-process, no toolkit needed) or "nvcc" (``nvcc -cubin``; for
    sources that need the full toolkit, e.g. CUTLASS/CuTe headers given with ``-I``).
    ``options``: extra compiler options (``-DTILE=64``, ``--use_fast_math``, ``-maxrregcount=128``,
    ``-I/path``). ``name_expressions``: template instantiations to export, e.g. ``["gemm<128, 64>"]``;
    fetch them with ``mod.kernel("gemm<128, 64>")``. Raises ``CompileError`` with the log on failure.
    """
    t0 = time.perf_counter()
    sm = normalize_arch(arch_override) if arch_override else arch()
    root = cache_dir()
    os.makedirs(root, exist_ok=True)
    if backend == "nvrtc":
        tool = _get_nvrtc()
        opts = [f"--gpu-architecture={sm}"] + BASE_OPTIONS + [f"-I{d}" for d in tool.include_dirs()] + list(options)
        identity = tool.identity
    elif backend == "nvcc":
        opts = [_gencode(sm)] + BASE_OPTIONS + list(options)
        identity = _nvcc_identity(_nvcc_path())
    else:
        raise ValueError(f"cuda.compile: backend must be 'nvrtc' or 'nvcc', not {backend!r}")
    key_data = json.dumps({"v": HELPER_VERSION, "src": source, "opts": opts, "arch": sm, "backend": backend,
                           "names": list(name_expressions), "tool": identity})
    key = hashlib.sha256(key_data.encode()).hexdigest()[:32]
    cubin_path = os.path.join(root, key + ".cubin")
    meta_path = os.path.join(root, key + ".json")

    with _lock:
        module = _modules.get(key)
        hit = module is not None or os.path.exists(cubin_path)
        if module is None:
            if hit:
                with open(meta_path, encoding="utf-8") as f:
                    meta = json.load(f)
                with open(cubin_path, "rb") as f:
                    cubin = f.read()
            else:
                if backend == "nvrtc":
                    cubin, lowered, log = tool.compile(source, name, opts, list(name_expressions))
                else:
                    cubin, lowered, log = _nvcc_build(source, name, opts)
                meta = {"lowered": lowered, "log": log, "arch": sm, "options": opts, "backend": backend}
                # Metadata first, cubin last: a present cubin means a complete entry.
                _atomic_write(meta_path, json.dumps(meta).encode())
                _atomic_write(os.path.join(root, key + ".cu"), source.encode())
                _atomic_write(cubin_path, cubin)
            module = Module(cubin, meta, key, source)
            _modules[key] = module
    _record("cuda-" + backend, key, hit, time.perf_counter() - t0, arch=sm)
    return module


# -- driver API ---------------------------------------------------------------------------------
_driver = None


def _cu():
    global _driver
    if _driver is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError(f"the CUDA driver (libcuda.so.1) cannot be loaded: {e}; is an NVIDIA GPU and driver "
                            f"present? (kforge eval --compile-only builds without one)") from e
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p, ctypes.c_void_p,
                                                                                 ctypes.c_void_p]
        lib.cuModuleLoadData.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.cuModuleGetFunction.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
        lib.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_void_p]
        _driver = lib
    return _driver


def _err_name(code: int) -> str:
    s = ctypes.c_char_p()
    if _cu().cuGetErrorName(code, ctypes.byref(s)) == 0 and s.value:
        return s.value.decode()
    return f"CUresult {code}"


def _check(code: int, what: str) -> None:
    if code != 0:
        raise CudaError(f"{what} failed: {_err_name(code)}")


# CUfunction_attribute values used here.
_ATTR_MAX_THREADS = 0
_ATTR_NUM_REGS = 4
_ATTR_MAX_DYNAMIC_SHARED = 8
_ATTR_SHARED_STATIC = 1


# -- parameter types from the source ------------------------------------------------------------
_SCALARS = {
    "int": ctypes.c_int32, "signed int": ctypes.c_int32, "int32_t": ctypes.c_int32,
    "unsigned": ctypes.c_uint32, "unsigned int": ctypes.c_uint32, "uint32_t": ctypes.c_uint32,
    "long": ctypes.c_int64, "long int": ctypes.c_int64, "long long": ctypes.c_int64, "long long int": ctypes.c_int64,
    "int64_t": ctypes.c_int64, "ptrdiff_t": ctypes.c_int64,
    "unsigned long": ctypes.c_uint64, "unsigned long long": ctypes.c_uint64, "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_uint64,
    "short": ctypes.c_int16, "int16_t": ctypes.c_int16, "unsigned short": ctypes.c_uint16, "uint16_t": ctypes.c_uint16,
    "char": ctypes.c_int8, "int8_t": ctypes.c_int8, "unsigned char": ctypes.c_uint8, "uint8_t": ctypes.c_uint8,
    "bool": ctypes.c_bool, "float": ctypes.c_float, "double": ctypes.c_double,
}
# Pointer element type -> the torch dtypes a tensor passed for it may have.
_POINTEES = {
    "float": (torch.float32,), "double": (torch.float64,), "__half": (torch.float16,), "half": (torch.float16,),
    "__nv_bfloat16": (torch.bfloat16,), "nv_bfloat16": (torch.bfloat16,),
    "int": (torch.int32,), "int32_t": (torch.int32,), "unsigned int": (torch.int32, torch.uint32),
    "uint32_t": (torch.int32, torch.uint32), "long long": (torch.int64,), "int64_t": (torch.int64,),
    "long": (torch.int64,), "unsigned long long": (torch.int64, torch.uint64), "uint64_t": (torch.int64, torch.uint64),
    "short": (torch.int16,), "int16_t": (torch.int16,), "char": (torch.int8, torch.uint8, torch.bool),
    "int8_t": (torch.int8,), "signed char": (torch.int8,), "unsigned char": (torch.uint8, torch.bool),
    "uint8_t": (torch.uint8, torch.bool), "bool": (torch.bool,),
    "float2": (torch.float32,), "float4": (torch.float32,), "double2": (torch.float64,), "int4": (torch.int32,),
    "int2": (torch.int32,), "__half2": (torch.float16,), "half2": (torch.float16,),
    "__nv_bfloat162": (torch.bfloat16,),
}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "__grid_constant__", "struct"}


class _Param:
    __slots__ = ("text", "pointer", "ctype", "pointee")

    def __init__(self, text: str):
        self.text = " ".join(text.split())
        self.pointer = "*" in text
        words = [w for w in re.split(r"[\s*&]+", re.sub(r"\[.*?\]", "", text)) if w and w not in _QUALIFIERS]
        type_words = words[:-1] if len(words) > 1 else words  # drop the parameter's name
        base = " ".join(w for w in type_words if not w.startswith("std::")) or " ".join(type_words)
        base = base.replace("std::", "")
        self.pointee = base if self.pointer else None
        self.ctype = None if self.pointer else _SCALARS.get(base)


def _strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    return re.sub(r"//[^\n]*", " ", src)


def parse_signatures(source: str) -> dict:
    """``extern "C"`` ``__global__`` functions of ``source`` -> their parameters (best effort)."""
    src = _strip_comments(source)
    extern_blocks = [(m.start(), _closing(src, m.end() - 1)) for m in re.finditer(r'extern\s+"C"\s*\{', src)]
    sigs = {}
    for m in re.finditer(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+"
                         r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(", src):
        head = src[max(0, m.start() - 40):m.start()]
        in_block = any(a <= m.start() < b for a, b in extern_blocks)
        if not (in_block or re.search(r'extern\s+"C"\s*$', head)):
            continue
        end = _closing(src, m.end() - 1)
        params_text = src[m.end():end].strip()
        params = [] if params_text in ("", "void") else [_Param(p) for p in _split_top(params_text)]
        sigs[m.group(1)] = params
    return sigs


def _closing(src: str, open_idx: int) -> int:
    """The index of the bracket that closes the one at ``open_idx`` (``{`` or ``(``); len(src) when none does."""
    opening = src[open_idx]
    closing = {"{": "}", "(": ")"}[opening]
    depth = 0
    for i in range(open_idx, len(src)):
        depth += {opening: 1, closing: -1}.get(src[i], 0)
        if depth == 0:
            return i
    return len(src)


def _split_top(text: str) -> list:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in (p.strip() for p in parts) if p]


# -- modules and kernels ------------------------------------------------------------------------
class Module:
    """A built cubin. Kernels are attributes (``mod.name``) or ``mod.kernel("name<T, 4>")``; the
    cubin is loaded into the current device's context on first use."""

    def __init__(self, cubin: bytes, meta: dict, key: str, source: str):
        self.cubin = cubin
        self.key = key
        self.arch = meta.get("arch")
        self.log = meta.get("log", "")
        self._lowered = meta.get("lowered", {})
        self._signatures = parse_signatures(source)
        self._handles = {}  # device index -> CUmodule
        self._kernels = {}

    def kernel(self, name: str, argtypes=None) -> "Kernel":
        """The kernel ``name`` (an ``extern "C"`` name or one of ``name_expressions``). ``argtypes``
        overrides the parameter types read from the source: a list of ctypes types, with
        ``ctypes.c_void_p`` for pointers."""
        k = self._kernels.get((name, None if argtypes is None else tuple(argtypes)))
        if k is None:
            if argtypes is not None:
                params = [_Param("void* p") if t is ctypes.c_void_p else _typed_param(t) for t in argtypes]
            else:
                params = self._signatures.get(name)
            k = Kernel(self, name, self._lowered.get(name, name), params)
            self._kernels[(name, None if argtypes is None else tuple(argtypes))] = k
        return k

    def __getattr__(self, name: str) -> "Kernel":
        if name.startswith("_"):
            raise AttributeError(name)
        return self.kernel(name)

    def _function(self, symbol: str, device: int) -> ctypes.c_void_p:
        if compile_only():
            raise CudaError("compile-only mode (KFORGE_COMPILE_ONLY=1): kernels are built but not launched")
        cu = _cu()
        handle = self._handles.get(device)
        if handle is None:
            _ensure_context(device)
            handle = ctypes.c_void_p()
            _check(cu.cuModuleLoadData(ctypes.byref(handle), self.cubin),
                   f"loading the {self.arch} cubin on cuda:{device} (cuModuleLoadData; an architecture mismatch "
                   f"shows as CUDA_ERROR_NO_BINARY_FOR_GPU: set KFORGE_CUDA_ARCH)")
            self._handles[device] = handle
        fn = ctypes.c_void_p()
        code = cu.cuModuleGetFunction(ctypes.byref(fn), handle, symbol.encode())
        if code != 0:
            raise CudaError(f"kernel {symbol!r} not found in the module ({_err_name(code)}); declare it "
                            f'extern "C" __global__, or list a template instantiation in name_expressions')
        return fn


def _typed_param(ctype) -> _Param:
    p = _Param("int x")
    p.ctype = ctype
    return p


def _ensure_context(device: int) -> None:
    # torch creates the device's primary context lazily; the driver API needs it current. Launches
    # always target torch's current device, so that is the context to make current.
    if device != torch.cuda.current_device():
        raise CudaError(f"cuda:{device} is not torch's current device ({torch.cuda.current_device()})")
    torch.cuda.synchronize()
    cur = ctypes.c_void_p()
    _check(_cu().cuCtxGetCurrent(ctypes.byref(cur)), "cuCtxGetCurrent")
    if not cur.value:
        raise CudaError("no CUDA context is current after torch initialised the device")


class Kernel:
    """One ``__global__`` function. Call it as ``k(grid, block, args, shared_mem=0, stream=None)``
    or ``k[grid, block](*args)``; ``grid``/``block`` are ints or tuples of up to 3."""

    def __init__(self, module: Module, name: str, symbol: str, params):
        self.module = module
        self.name = name
        self.symbol = symbol
        self.params = params
        self._fn = {}
        self._smem_limit = {}

    def __getitem__(self, config):
        grid, block = config[0], config[1]
        shared_mem = config[2] if len(config) > 2 else 0
        return lambda *args: self(grid, block, args, shared_mem=shared_mem)

    def attributes(self, device: int = None) -> dict:
        """Registers per thread, static shared memory and the largest block this kernel can launch."""
        fn = self._function(torch.cuda.current_device() if device is None else device)
        out = {}
        for name, attr in (("num_regs", _ATTR_NUM_REGS), ("shared_static_bytes", _ATTR_SHARED_STATIC),
                           ("max_threads_per_block", _ATTR_MAX_THREADS)):
            v = ctypes.c_int()
            _check(_cu().cuFuncGetAttribute(ctypes.byref(v), attr, fn), "cuFuncGetAttribute")
            out[name] = v.value
        return out

    def _function(self, device: int):
        fn = self._fn.get(device)
        if fn is None:
            fn = self.module._function(self.symbol, device)
            self._fn[device] = fn
        return fn

    def __call__(self, grid, block, args=(), shared_mem: int = 0, stream=None):
        if compile_only():
            raise CudaError("compile-only mode (KFORGE_COMPILE_ONLY=1): kernels are built but not launched")
        grid, block = _dim3(grid, "grid"), _dim3(block, "block")
        device = torch.cuda.current_device()
        values = self._convert(args, device)
        fn = self._function(device)
        if shared_mem > 48 * 1024 and self._smem_limit.get(device, 0) < shared_mem:
            # Above 48 KB a kernel must opt in to dynamic shared memory (up to 227 KB on Hopper).
            _check(_cu().cuFuncSetAttribute(fn, _ATTR_MAX_DYNAMIC_SHARED, int(shared_mem)),
                   f"raising {self.name}'s dynamic shared memory to {shared_mem} bytes (cuFuncSetAttribute)")
            self._smem_limit[device] = shared_mem
        ptrs = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        s = stream if stream is not None else torch.cuda.current_stream(device)
        handle = s.cuda_stream if hasattr(s, "cuda_stream") else int(s)
        code = _cu().cuLaunchKernel(fn, *grid, *block, int(shared_mem), ctypes.c_void_p(handle), ptrs, None)
        if code != 0:
            hint = ""
            threads = block[0] * block[1] * block[2]
            if threads > 1024:
                hint = f" ({threads} threads per block; the limit is 1024)"
            elif shared_mem > 227 * 1024:
                hint = f" ({shared_mem} bytes of dynamic shared memory; Hopper allows 227 KB per block)"
            raise CudaError(f"launching {self.name} with grid {grid}, block {block}, {shared_mem} B shared memory "
                            f"failed: {_err_name(code)}{hint}")

    def _convert(self, args, device: int) -> list:
        params = self.params
        if params is not None and len(params) != len(args):
            sig = ", ".join(p.text for p in params)
            raise TypeError(f"{self.name}({sig}) takes {len(params)} arguments, {len(args)} given")
        values = []
        for i, a in enumerate(args):
            p = params[i] if params is not None else None
            if isinstance(a, torch.Tensor):
                values.append(ctypes.c_void_p(_tensor_ptr(a, device, self.name, i, p)))
            elif isinstance(a, ctypes._SimpleCData) or isinstance(a, (ctypes.Structure, ctypes.Array)):
                values.append(a)  # an explicit ctypes value (or a by-value struct such as a CUtensorMap)
            elif p is None:
                raise TypeError(f"{self.name}: argument {i} ({type(a).__name__}) needs a declared type: the "
                                f"kernel's signature was not found in the source; pass argtypes to "
                                f"mod.kernel(name, argtypes=[...]) or ctypes values")
            elif p.pointer:
                if not isinstance(a, int):
                    raise TypeError(f"{self.name}: argument {i} ({p.text}) expects a tensor, got {type(a).__name__}")
                values.append(ctypes.c_void_p(a))
            elif p.ctype is None:
                raise TypeError(f"{self.name}: argument {i} ({p.text}) has a type this helper cannot convert "
                                f"from a Python value; pass a ctypes value")
            elif isinstance(a, bool) or isinstance(a, (int, float)):
                if p.ctype in (ctypes.c_float, ctypes.c_double):
                    values.append(p.ctype(float(a)))
                else:
                    if isinstance(a, float):
                        raise TypeError(f"{self.name}: argument {i} ({p.text}) is an integer, got float {a}")
                    values.append(p.ctype(int(a)))
            else:
                raise TypeError(f"{self.name}: argument {i} ({p.text}) got {type(a).__name__}")
        return values


def _tensor_ptr(t: torch.Tensor, device: int, name: str, i: int, p) -> int:
    if t.device.type != "cuda":
        raise ValueError(f"{name}: argument {i} is a tensor on {t.device}; kernels read GPU memory (.cuda())")
    if t.device.index != device:
        raise ValueError(f"{name}: argument {i} is on {t.device}, the launch is on cuda:{device}")
    if not t.is_contiguous():
        raise ValueError(f"{name}: argument {i} of shape {tuple(t.shape)} with strides {t.stride()} is not "
                         f"contiguous; call .contiguous() first and keep the result in a variable")
    if p is not None and p.pointer:
        allowed = _POINTEES.get(p.pointee)
        if allowed is not None and t.dtype not in allowed:
            raise TypeError(f"{name}: argument {i} ({p.text}) got a {t.dtype} tensor "
                            f"(convert with .to({allowed[0]}))")
    return t.data_ptr()


def _dim3(v, what: str) -> tuple:
    if isinstance(v, int):
        v = (v,)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or any(x < 1 for x in v):
        raise ValueError(f"{what} must be 1 to 3 positive sizes, got {v}")
    return v + (1,) * (3 - len(v))

