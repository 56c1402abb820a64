"""Helper of the ``opencl`` target: builds OpenCL C with pyopencl on the CPU device (PoCL) and launches
kernels directly on torch CPU tensors.

    from kforge_kernels import ocl
    prog = ocl.build(SRC)                              # cached across processes
    out = torch.empty_like(x)
    prog.launch("relu", (x.numel(),), None, x, out, x.numel())

Tensors are passed zero-copy: each becomes a ``CL_MEM_USE_HOST_PTR`` buffer over the tensor's own
memory (measured ~3x faster than copying in and out on PoCL), and after the kernel the buffers it
may write are mapped once so the host view is coherent as the OpenCL spec requires. Python ints and
floats are converted to the kernel's declared parameter type (``int``, ``long``, ``float``, ...).

Caches: PoCL keeps compiled programs and per-work-group-size kernels in ``POCL_CACHE_DIR`` and
pyopencl its binaries in a cache dir; both default to ``$KFORGE_LAUNCH_CACHE`` (a candidate's private
cache inside kforge's sandbox), else ``$KFORGE_BUILD_CACHE`` (default
``~/.cache/kforge/build``), subfolders ``pocl`` and ``pyopencl``. Import this module before anything
else initialises OpenCL in the process, or PoCL keeps its own cache location.

Self-contained on purpose (stdlib + torch + numpy/pyopencl): it may be copied into standalone files.
"""

import hashlib
import json
import os
import re
import threading
import time


_private_root = []  # the standalone file: a cache folder of this process's own, made on first use


def _cache_root() -> str:
    if __name__.startswith("kforge_standalone."):
        # Without kforge around, never load kernels from a folder another program could have written.
        if not _private_root:
            import atexit
            import shutil
            import tempfile

            _private_root.append(tempfile.mkdtemp(prefix="kforge-ocl-"))
            atexit.register(shutil.rmtree, _private_root[0], True)
        return _private_root[0]
    # PoCL and pyopencl fill their caches inside this process: for a candidate they are private
    # (KFORGE_LAUNCH_CACHE, deleted with its sandbox), never a folder another process loads from.
    return (os.environ.get("KFORGE_LAUNCH_CACHE") or os.environ.get("KFORGE_BUILD_CACHE")
            or os.path.join(os.path.expanduser("~"), ".cache", "kforge", "build"))


# PoCL reads these when the platform is first initialised, so they are set before pyopencl is used.
if __name__.startswith("kforge_standalone."):
    os.environ["POCL_CACHE_DIR"] = os.path.join(_cache_root(), "pocl")
else:
    os.environ.setdefault("POCL_CACHE_DIR", os.path.join(_cache_root(), "pocl"))
if "OMP_NUM_THREADS" in os.environ:
    # The harness fixes the thread count through OMP_NUM_THREADS; PoCL's pthread device follows it too.
    os.environ.setdefault("POCL_MAX_PTHREAD_COUNT", os.environ["OMP_NUM_THREADS"])

import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402
import torch  # noqa: E402

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

__all__ = ["build", "Program", "LocalMemory", "context", "queue", "device", "CompileError"]

# Bump when the build recipe changes so old cache markers are not trusted.
HELPER_VERSION = "1"

# These trade IEEE accuracy for speed and break the 1e-4 tolerance on reductions and exp/log.
FORBIDDEN_OPTIONS = ("-cl-fast-relaxed-math", "-cl-unsafe-math-optimizations", "-cl-finite-math-only")

LocalMemory = cl.LocalMemory  # pass ocl.LocalMemory(nbytes) for a __local pointer parameter

_lock = threading.Lock()
_state = {}
_programs = {}

_SCALARS = {
    "char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
    "int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
    "float": np.float32, "double": np.float64, "half": np.float16,
    "unsigned char": np.uint8, "unsigned short": np.uint16, "unsigned int": np.uint32,
    "unsigned long": np.uint64,
}


def _init():
    if not _state:
        devs = [d for p in cl.get_platforms() for d in p.get_devices(device_type=cl.device_type.CPU)]
        if not devs:
            devs = [d for p in cl.get_platforms() for d in p.get_devices()]
        if not devs:
            raise RuntimeError("no OpenCL device found (install pocl-opencl-icd)")
        ctx = cl.Context(devices=[devs[0]])
        q = cl.CommandQueue(ctx)
        _state.update(device=devs[0], context=ctx, queue=q, direct=_probe_direct(ctx, q))
    return _state


def _probe_direct(ctx, q) -> bool:
    """Whether kernels write straight into USE_HOST_PTR memory (true on PoCL's CPU devices), also at
    an odd offset. Then launch() can skip the map/unmap round trip that costs ~100 us per call."""
    prg = cl.Program(ctx, "__kernel void k(__global int* p) { p[get_global_id(0)] = 7; }").build()
    kern = cl.Kernel(prg, "k")
    host = np.zeros(64, dtype=np.int32)
    for view in (host[:32], host[1:33]):
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, hostbuf=view)
        kern.set_arg(0, buf)
        cl.enqueue_nd_range_kernel(q, kern, (32,), None)
        q.finish()
        ok = bool((view == 7).all())
        del buf
        if not ok:
            return False
    return True


def device() -> "cl.Device":
    return _init()["device"]


def context() -> "cl.Context":
    return _init()["context"]


def queue() -> "cl.CommandQueue":
    return _init()["queue"]


def build(source: str, options=()) -> "Program":
    """Builds OpenCL C ``source`` for the CPU device (cached) and returns a ``Program``.

    ``options`` are extra build options (e.g. ``["-DTILE=16"]``); fast-math options are rejected.
    Raises ``CompileError`` with the full build log on failure.
    """
    options = [options] if isinstance(options, str) else list(options)
    bad = [o for o in options if o in FORBIDDEN_OPTIONS]
    if bad:
        raise CompileError(f"build options {bad} are not allowed: they break the accuracy check", "")
    t0 = time.perf_counter()
    st = _init()
    dev = st["device"]
    # -cl-kernel-arg-info lets launch() convert Python scalars to each parameter's declared type.
    opts = ["-cl-kernel-arg-info"] + options
    key = hashlib.sha256(json.dumps({
        "v": HELPER_VERSION, "src": source, "opts": opts, "dev": dev.name,
        "driver": dev.driver_version, "platform": dev.platform.version,
    }).encode()).hexdigest()[:32]
    with _lock:
        prog = _programs.get(key)
        if prog is not None:
            _record("opencl", key, True, time.perf_counter() - t0)
        else:
            root = os.path.join(_cache_root(), "opencl")
            os.makedirs(root, exist_ok=True)
            marker = os.path.join(root, key + ".ok")
            # PoCL's and pyopencl's caches do the work; the marker says whether this exact build has
            # succeeded before, which is how a cache hit is reported.
            hit = os.path.exists(marker)
            try:
                raw = cl.Program(st["context"], source).build(
                    options=opts, cache_dir=os.path.join(_cache_root(), "pyopencl"))
            except cl.Error as e:
                log = str(e)
                first = next((ln.strip() for ln in log.splitlines() if "error" in ln), "")
                raise CompileError(f"OpenCL build failed: {first}", log) from None
            if not hit:
                with open(marker, "w") as f:
                    f.write(source)
            prog = _programs[key] = Program(raw, key)
            _record("opencl", key, hit, time.perf_counter() - t0)
    return prog


class Program:
    """A built OpenCL program; ``launch`` runs one of its kernels synchronously."""

    def __init__(self, program, key: str):
        self.program = program
        self.key = key
        self._kernels = {}

    def _kernel(self, name: str):
        k = self._kernels.get(name)
        if k is None:
            try:
                kern = getattr(self.program, name)
            except AttributeError:
                raise KeyError(f"no __kernel named {name!r} in the program") from None
            info = []
            for i in range(kern.num_args):
                tname = kern.get_arg_info(i, cl.kernel_arg_info.TYPE_NAME).strip()
                addr = kern.get_arg_info(i, cl.kernel_arg_info.ADDRESS_QUALIFIER)
                tq = kern.get_arg_info(i, cl.kernel_arg_info.TYPE_QUALIFIER)
                const = bool(tq & cl.kernel_arg_type_qualifier.CONST)
                info.append((tname, addr, const))
            k = self._kernels[name] = (kern, info)
        return k

    def launch(self, name: str, global_size, local_size, *args) -> None:
        """Runs kernel ``name`` over ``global_size`` (tuple) with ``local_size`` (tuple or None: PoCL
        picks) and waits for it. Arguments: contiguous CPU tensors for ``__global`` pointers, Python or
        numpy scalars for value parameters, ``LocalMemory(nbytes)`` for ``__local`` pointers."""
        kern, info = self._kernel(name)
        if len(args) != len(info):
            raise TypeError(f"kernel {name} takes {len(info)} arguments, got {len(args)}")
        buffers = []  # held until the kernel finishes: set_arg does not keep them alive
        written = []
        ctx = _state["context"]
        q = _state["queue"]
        for i, (a, (tname, addr, const)) in enumerate(zip(args, info)):
            if isinstance(a, torch.Tensor):
                want = _SCALARS.get(re.sub(r"^(const|volatile)\s+", "", tname).rstrip("*").strip())
                if want is not None and _np_dtype(a) != np.dtype(want):
                    raise TypeError(f"kernel {name} argument {i} is {tname} but the tensor has dtype {a.dtype}")
                buf = _buffer(ctx, a, name, i)
                kern.set_arg(i, buf)
                buffers.append(buf)
                if not const:
                    written.append((buf, a))
            elif isinstance(a, (cl.LocalMemory, cl.MemoryObjectHolder)):
                kern.set_arg(i, a)
            else:
                base = re.sub(r"^(const|volatile)\s+", "", tname)
                dt = _SCALARS.get(base)
                if dt is None:
                    raise TypeError(f"kernel {name} argument {i}: cannot pass {type(a).__name__} as {tname}")
                kern.set_arg(i, dt(a))
        gs = tuple(global_size) if not isinstance(global_size, int) else (global_size,)
        ls = None if local_size is None else (tuple(local_size) if not isinstance(local_size, int) else (local_size,))
        cl.enqueue_nd_range_kernel(q, kern, gs, ls)
        # Mapping a USE_HOST_PTR buffer makes the host memory hold the kernel's results; not needed
        # where the probe showed the device computes in the host memory itself.
        for buf, t in ([] if _state["direct"] else written):
            m, _ = cl.enqueue_map_buffer(q, buf, cl.map_flags.READ, 0, (t.numel(),), _np_dtype(t))
            m.base.release(q)
        q.finish()


def _np_dtype(t: torch.Tensor):
    return torch.empty(0, dtype=t.dtype).numpy().dtype


def _buffer(ctx, t: torch.Tensor, name: str, i: int):
    if t.device.type != "cpu":
        raise ValueError(f"kernel {name} argument {i}: tensor is on {t.device}; the OpenCL device reads CPU memory")
    if not t.is_contiguous():
        raise ValueError(
            f"kernel {name} argument {i}: tensor of shape {tuple(t.shape)} with strides {t.stride()} is not "
            f"contiguous; pass .contiguous()")
    if t.numel() == 0:
        raise ValueError(f"kernel {name} argument {i}: empty tensor (OpenCL buffers cannot be empty)")
    return cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, hostbuf=t.detach().numpy())
