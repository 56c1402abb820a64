"""Helper of the ``wgpu`` target: builds WebGPU compute shaders written in WGSL with ``wgpu`` (Vulkan,
Metal or D3D12 underneath; Mesa's lavapipe on a machine without a GPU) and runs them on torch tensors.

    from kforge_kernels import wgsl
    kern = wgsl.build(SRC)                              # validated and compiled once per process
    out = torch.empty_like(x)
    kern.launch((groups_x, 1, 1), x, out, n=x.numel())  # tensors -> bindings 0, 1, ...; keywords -> overrides

Bindings: the shader declares ``@group(0) @binding(i) var<storage, read>`` (inputs) or
``var<storage, read_write>`` (outputs) buffers; the i-th tensor argument is bound at binding i. Each
buffer mirrors its tensor: every tensor is copied in before the dispatch, and the ``read_write`` ones
are copied back into their tensors after it (they must be contiguous). Scalars such as sizes are WGSL
``override`` constants passed as keyword arguments; a pipeline is specialised (and cached) per set of
values. WGSL has no 64-bit integers: bind an ``int64`` tensor as ``array<u32>`` and read element
``2 * i`` (the low word, little-endian) for non-negative indices below 2**31.

Self-contained on purpose (stdlib + torch + numpy/wgpu): it may be copied into standalone files.
"""

import hashlib
import os
import re
import threading
import time

if "OMP_NUM_THREADS" in os.environ:
    # The harness fixes the thread count through OMP_NUM_THREADS; lavapipe's rasteriser threads follow it.
    os.environ.setdefault("LP_NUM_THREADS", os.environ["OMP_NUM_THREADS"])

import numpy as np  # noqa: E402
import torch  # noqa: E402
import wgpu  # noqa: E402

# wgpu starts a poller thread that waits on the device queue; the harness does not count it as the
# candidate's own thread (kforge_worker.checks.runtime_checks).
RUNTIME_THREAD_PACKAGES = ("wgpu",)

try:
    from kforge_kernels.errors import CompileError
except ImportError:  # inlined into a standalone file
    class CompileError(Exception):
        """The shader failed to validate or build. ``log`` holds the compiler's full output."""

        def __init__(self, message, log=""):
            super().__init__(message)
            self.log = log

try:
    from kforge_kernels import buildinfo as _buildinfo
    _record = _buildinfo.record
except ImportError:  # inlined into a standalone file: nobody collects build events
    def _record(path, key, cache_hit, seconds, **extra):
        pass

__all__ = ["build", "Kernel", "device", "adapter_info", "adapter_name", "CompileError"]

_BINDING = re.compile(
    r"@group\(\s*0\s*\)\s*@binding\(\s*(\d+)\s*\)\s*var\s*<\s*(storage|uniform)\s*(?:,\s*(read_write|read))?\s*>")

_lock = threading.Lock()
_state = {}


def device():
    """The process's one wgpu device. The adapter is wgpu's choice for "high-performance": a discrete GPU
    before an integrated one, a CPU (lavapipe) last; the Vulkan driver files it considers follow
    VK_DRIVER_FILES, the back end WGPU_BACKEND_TYPE."""
    with _lock:
        if "device" not in _state:
            adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
            if adapter is None:
                raise RuntimeError("wgpu found no adapter (is a Vulkan driver such as mesa-vulkan-drivers installed?)")
            limits = {k: adapter.limits[k] for k in ("max-storage-buffer-binding-size", "max-buffer-size",
                                                     "max-storage-buffers-per-shader-stage")}
            _state["adapter"] = adapter
            _state["device"] = adapter.request_device_sync(required_limits=limits)
        return _state["device"]


def adapter_info() -> dict:
    """The adapter the device runs on: name, backend (e.g. Vulkan), type (DiscreteGPU, CPU, ...), vendor,
    driver description."""
    device()
    info = _state["adapter"].info
    return {"name": info.get("device", "?"), "backend": info.get("backend_type", "?"),
            "type": info.get("adapter_type", "?"), "vendor": info.get("vendor", ""),
            "description": info.get("description", "")}


def adapter_name() -> str:
    """"NAME (BACKEND, TYPE)", as recorded with each build (e.g. "llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, CPU)")."""
    info = adapter_info()
    return f"{info['name']} ({info['backend']}, {info['type']})"


def _bindings(src: str) -> list:
    """[(binding, kind)] in binding order, kind one of "read", "read_write", "uniform"."""
    found = {}
    for m in _BINDING.finditer(src):
        index = int(m.group(1))
        kind = "uniform" if m.group(2) == "uniform" else (m.group(3) or "read")
        if index in found:
            raise CompileError(f"binding {index} of group 0 is declared twice")
        found[index] = kind
    if sorted(found) != list(range(len(found))):
        raise CompileError(f"group 0 bindings must be numbered 0..n-1 without gaps; found {sorted(found)}")
    return [(i, found[i]) for i in range(len(found))]


class Kernel:
    """One WGSL module and its compute entry point; ``launch`` dispatches it on tensors."""

    def __init__(self, src: str, entry: str):
        self.src, self.entry = src, entry
        self.bindings = _bindings(src)
        dev = device()
        try:
            self.module = dev.create_shader_module(code=src)
        except Exception as e:  # naga's validation error, with the offending line
            raise CompileError(f"WGSL module failed to build: {str(e).splitlines()[0] if str(e) else e}",
                               log=str(e)) from None
        buffer_type = {"read": wgpu.BufferBindingType.read_only_storage,
                       "read_write": wgpu.BufferBindingType.storage,
                       "uniform": wgpu.BufferBindingType.uniform}
        self.layout = dev.create_bind_group_layout(entries=[
            {"binding": i, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": buffer_type[kind]}}
            for i, kind in self.bindings])
        self.pipeline_layout = dev.create_pipeline_layout(bind_group_layouts=[self.layout])
        self._pipelines = {}
        self._buffers = {}

    def pipeline(self, constants: dict):
        key = tuple(sorted(constants.items()))
        if key not in self._pipelines:
            try:
                self._pipelines[key] = device().create_compute_pipeline(
                    layout=self.pipeline_layout,
                    compute={"module": self.module, "entry_point": self.entry, "constants": dict(constants)})
            except Exception as e:
                raise CompileError(f"compute pipeline '{self.entry}' failed to build: {str(e).splitlines()[0]}",
                                   log=str(e)) from None
        return self._pipelines[key]

    def _buffer(self, binding: int, kind: str, nbytes: int):
        """The device buffer for a binding (kept from call to call while the size stays the same)."""
        key = (binding, kind, nbytes)
        if key not in self._buffers:
            usage = wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
            if kind == "readback":
                usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
            elif kind == "uniform":
                usage |= wgpu.BufferUsage.UNIFORM
            else:
                usage |= wgpu.BufferUsage.STORAGE
            self._buffers[key] = device().create_buffer(size=nbytes, usage=usage)
        return self._buffers[key]

    def launch(self, groups, *tensors, **constants):
        """Dispatches ``groups`` workgroups ((x,), (x, y) or (x, y, z)) on ``tensors`` and waits for it."""
        if len(tensors) != len(self.bindings):
            raise TypeError(f"the shader declares {len(self.bindings)} bindings in group 0; {len(tensors)} tensors given")
        groups = tuple(int(g) for g in groups) + (1,) * (3 - len(groups))
        dev = device()
        entries, outputs = [], []
        for (binding, kind), t in zip(self.bindings, tensors):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"binding {binding}: expected a tensor, got {type(t).__name__} "
                                "(pass scalars as override constants, by keyword)")
            if kind == "read_write" and not t.is_contiguous():
                raise ValueError(f"binding {binding} is read_write: its tensor must be contiguous")
            host = t.detach().contiguous().cpu().view(-1).view(torch.uint8).numpy()
            nbytes = max(4, -(-host.size // 4) * 4)  # buffer sizes are multiples of 4 bytes
            if host.size != nbytes:
                host = np.concatenate([host, np.zeros(nbytes - host.size, np.uint8)])
            buf = self._buffer(binding, kind, nbytes)
            dev.queue.write_buffer(buf, 0, host)
            entries.append({"binding": binding, "resource": {"buffer": buf, "offset": 0, "size": nbytes}})
            if kind == "read_write":
                outputs.append((binding, buf, t))
        bind_group = dev.create_bind_group(layout=self.layout, entries=entries)
        encoder = dev.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(self.pipeline(constants))
        compute.set_bind_group(0, bind_group)
        compute.dispatch_workgroups(*groups)
        compute.end()
        staged = []
        for binding, buf, t in outputs:  # copied to host-mapped buffers in the same submission
            stage = self._buffer(binding, "readback", buf.size)
            encoder.copy_buffer_to_buffer(buf, 0, stage, 0, buf.size)
            staged.append((stage, t))
        dev.queue.submit([encoder.finish()])
        for stage, t in staged:
            stage.map_sync(wgpu.MapMode.READ)  # waits for the submission to finish
            try:
                data = np.frombuffer(stage.read_mapped(copy=False), dtype=np.uint8)[: t.numel() * t.element_size()]
                dst = t.detach().view(-1).view(torch.uint8)
                if dst.device.type == "cpu":
                    dst.numpy()[:] = data
                else:
                    dst.copy_(torch.from_numpy(data.copy()))
            finally:
                stage.unmap()


_kernels = {}


def build(src: str, entry: str = "main") -> Kernel:
    """Validates and compiles ``src`` (WGSL) for entry point ``entry``; cached per process."""
    key = hashlib.sha256(f"{entry}\0{src}".encode()).hexdigest()[:16]
    if key not in _kernels:
        start = time.perf_counter()
        _kernels[key] = Kernel(src, entry)
        _record("wgsl", key, False, time.perf_counter() - start, adapter=adapter_name())
    return _kernels[key]
