"""Device memory that two processes share through a file descriptor (CUDA virtual memory management).

The trusted reference and the sandboxed candidate run in different processes and PID namespaces.
Legacy CUDA IPC handles (``cudaIpcGetMemHandle``) do not work across PID namespaces and export a
whole caching-allocator segment, i.e. whatever else the exporter keeps next to the tensor. Here each
shared tensor gets an allocation of its own (``cuMemCreate``) exported as a POSIX file descriptor
(``CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR``) that can travel over a Unix socket with SCM_RIGHTS.
Nothing from torch's allocator is ever exported: ``export_tensor`` copies into a fresh allocation.

An importer can map what it imports with any access it likes, so a buffer handed to the candidate
is never read again by the trusted side, and a buffer received from the candidate is copied into
the trusted side's own memory (``import_tensor(..., copy=True)``) before anything looks at it.
"""

import ctypes
import gc
import os
import stat

import torch

# Enum values from cuda.h (CUDA 11.2+ driver API).
_ALLOCATION_TYPE_PINNED = 1
_LOCATION_TYPE_DEVICE = 1
_HANDLE_TYPE_POSIX_FD = 1
_GRANULARITY_RECOMMENDED = 1
ACCESS_READ = 1
ACCESS_READWRITE = 3


class DeviceBufferError(RuntimeError):
    pass


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_u64 = ctypes.c_uint64
_driver = None


def _cu():
    global _driver
    if _driver is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise DeviceBufferError(f"the CUDA driver (libcuda.so.1) cannot be loaded: {e}") from e
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuMemGetAllocationGranularity.argtypes = [ctypes.POINTER(ctypes.c_size_t),
                                                      ctypes.POINTER(_AllocationProp), ctypes.c_int]
        lib.cuMemCreate.argtypes = [ctypes.POINTER(_u64), ctypes.c_size_t, ctypes.POINTER(_AllocationProp), _u64]
        lib.cuMemAddressReserve.argtypes = [ctypes.POINTER(_u64), ctypes.c_size_t, ctypes.c_size_t, _u64, _u64]
        lib.cuMemMap.argtypes = [_u64, ctypes.c_size_t, ctypes.c_size_t, _u64, _u64]
        lib.cuMemSetAccess.argtypes = [_u64, ctypes.c_size_t, ctypes.POINTER(_AccessDesc), ctypes.c_size_t]
        lib.cuMemExportToShareableHandle.argtypes = [ctypes.c_void_p, _u64, ctypes.c_int, _u64]
        lib.cuMemImportFromShareableHandle.argtypes = [ctypes.POINTER(_u64), ctypes.c_void_p, ctypes.c_int]
        lib.cuMemUnmap.argtypes = [_u64, ctypes.c_size_t]
        lib.cuMemAddressFree.argtypes = [_u64, ctypes.c_size_t]
        lib.cuMemRelease.argtypes = [_u64]
        lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.cuDeviceGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
        _driver = lib
    return _driver


def _check(code: int, what: str) -> None:
    if code != 0:
        name = ctypes.c_char_p()
        _cu().cuGetErrorName(code, ctypes.byref(name))
        raise DeviceBufferError(f"{what} failed: {(name.value or b'CUresult %d' % code).decode()}")


def _ensure_context(device: int) -> None:
    # torch makes the device's primary context current on first use; the driver calls need it.
    torch.cuda.set_device(device)
    torch.cuda.init()
    torch.empty(1, device=f"cuda:{device}")
    ctx = ctypes.c_void_p()
    _check(_cu().cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    if not ctx.value:
        raise DeviceBufferError("no CUDA context is current after torch initialised the device")


_ERROR_OUT_OF_MEMORY = 2  # CUDA_ERROR_OUT_OF_MEMORY (cuda.h)
_ATTRIBUTE_VMM_SUPPORTED = 102  # CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED (cuda.h)
_ATTRIBUTE_POSIX_FD_SUPPORTED = 103  # CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED


def supported(device: int) -> bool:
    """Whether ``device`` can hold buffers shared by file descriptor (VMM with POSIX-fd handles):
    false without the driver library, and on drivers or platforms that lack either (some virtual
    GPUs, WSL)."""
    try:
        _ensure_context(device)
        for attribute in (_ATTRIBUTE_VMM_SUPPORTED, _ATTRIBUTE_POSIX_FD_SUPPORTED):
            value = ctypes.c_int()
            _check(_cu().cuDeviceGetAttribute(ctypes.byref(value), attribute, device), "cuDeviceGetAttribute")
            if not value.value:
                return False
        return True
    except Exception:  # no driver, no device, a torch built without CUDA
        return False


def _prop(device: int) -> _AllocationProp:
    prop = _AllocationProp()
    prop.type = _ALLOCATION_TYPE_PINNED
    prop.requestedHandleTypes = _HANDLE_TYPE_POSIX_FD
    prop.location = _Location(_LOCATION_TYPE_DEVICE, device)
    return prop


def _granularity(device: int) -> int:
    g = ctypes.c_size_t()
    _check(_cu().cuMemGetAllocationGranularity(ctypes.byref(g), ctypes.byref(_prop(device)), _GRANULARITY_RECOMMENDED),
           "cuMemGetAllocationGranularity")
    return g.value


class DeviceBuffer:
    """One mapped allocation. ``fd`` is set on the exporting side (close it once sent)."""

    def __init__(self, handle: int, ptr: int, size: int, nbytes: int, device: int, fd: int = -1):
        self.handle, self.ptr, self.size, self.nbytes, self.device, self.fd = handle, ptr, size, nbytes, device, fd

    def bytes(self) -> torch.Tensor:
        """The buffer as a uint8 tensor; the tensor keeps the buffer mapped while it lives."""
        holder = _ArrayHolder(self)
        return torch.as_tensor(holder, device=f"cuda:{self.device}")

    def close(self) -> None:
        if self.ptr:
            torch.cuda.synchronize(self.device)  # no queued work may still touch the range
            _cu().cuMemUnmap(self.ptr, self.size)
            _cu().cuMemAddressFree(self.ptr, self.size)
            _cu().cuMemRelease(self.handle)
            self.ptr = 0
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class _ArrayHolder:
    """What torch.as_tensor reads; the tensor it makes holds a reference to this, and so to the buffer."""

    def __init__(self, buf: DeviceBuffer):
        self.buf = buf
        self.__cuda_array_interface__ = {"shape": (buf.nbytes,), "typestr": "|u1", "data": (buf.ptr, False),
                                         "version": 3, "strides": None, "stream": None}


def _map(handle: int, nbytes: int, size: int, device: int, access: int) -> int:
    ptr = _u64()
    _check(_cu().cuMemAddressReserve(ctypes.byref(ptr), size, 0, 0, 0), "cuMemAddressReserve")
    try:
        _check(_cu().cuMemMap(ptr.value, size, 0, handle, 0), "cuMemMap")
        desc = _AccessDesc(_Location(_LOCATION_TYPE_DEVICE, device), access)
        _check(_cu().cuMemSetAccess(ptr.value, size, ctypes.byref(desc), 1), "cuMemSetAccess")
    except DeviceBufferError:
        _cu().cuMemUnmap(ptr.value, size)
        _cu().cuMemAddressFree(ptr.value, size)
        raise
    return ptr.value


def allocate(nbytes: int, device: int) -> DeviceBuffer:
    """A fresh exportable allocation of at least ``nbytes`` on ``device``, with its file descriptor."""
    _ensure_context(device)
    g = _granularity(device)
    size = max(g, (nbytes + g - 1) // g * g)
    handle = _u64()
    code = _cu().cuMemCreate(ctypes.byref(handle), size, ctypes.byref(_prop(device)), 0)
    if code == _ERROR_OUT_OF_MEMORY:
        # Memory torch freed stays reserved by its caching allocator, out of the driver's reach
        # (calibration's input draws and null outputs, gigabytes at real sizes): hand it back, retry.
        gc.collect()
        torch.cuda.empty_cache()
        code = _cu().cuMemCreate(ctypes.byref(handle), size, ctypes.byref(_prop(device)), 0)
    _check(code, f"cuMemCreate({size} B)")
    try:
        ptr = _map(handle.value, nbytes, size, device, ACCESS_READWRITE)
    except DeviceBufferError:
        _cu().cuMemRelease(handle.value)
        raise
    fd = ctypes.c_int(-1)
    buf = DeviceBuffer(handle.value, ptr, size, nbytes, device)
    _check(_cu().cuMemExportToShareableHandle(ctypes.byref(fd), handle.value, _HANDLE_TYPE_POSIX_FD, 0),
           "cuMemExportToShareableHandle")
    buf.fd = fd.value
    return buf


def import_buffer(fd: int, nbytes: int, device: int, access: int = ACCESS_READWRITE) -> DeviceBuffer:
    """Maps an allocation another process exported. ``fd`` stays the caller's to close.

    The descriptor comes from the other process: anything that is not what the driver exports (a
    FIFO that would block, a regular file) is refused before the driver sees it.
    """
    st = os.fstat(fd)
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        raise DeviceBufferError("the descriptor received is not an exported CUDA allocation")
    if nbytes < 0:
        raise DeviceBufferError(f"negative buffer size {nbytes}")
    _ensure_context(device)
    g = _granularity(device)
    size = max(g, (nbytes + g - 1) // g * g)
    handle = _u64()
    _check(_cu().cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), _HANDLE_TYPE_POSIX_FD),
           "cuMemImportFromShareableHandle")
    try:
        ptr = _map(handle.value, nbytes, size, device, access)
    except DeviceBufferError:
        _cu().cuMemRelease(handle.value)
        raise
    return DeviceBuffer(handle.value, ptr, size, nbytes, device)


def describe(t: torch.Tensor) -> dict:
    return {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "nbytes": t.numel() * t.element_size()}


def export_tensor(t: torch.Tensor) -> tuple:
    """Copies ``t`` (contiguous) into a fresh exportable allocation: (buffer, metadata)."""
    src = t.detach().contiguous()
    meta = describe(src)
    buf = allocate(meta["nbytes"], src.device.index or 0)
    if meta["nbytes"]:
        buf.bytes()[: meta["nbytes"]].copy_(src.view(-1).view(torch.uint8))
    torch.cuda.synchronize(buf.device)  # the copy is done before the descriptor leaves this process
    return buf, meta


def tensor_view(buf: DeviceBuffer, meta: dict) -> torch.Tensor:
    """The tensor ``meta`` describes, over ``buf`` (no copy)."""
    dtype = getattr(torch, meta["dtype"], None)
    if not isinstance(dtype, torch.dtype):
        raise DeviceBufferError(f"unknown dtype {meta['dtype']!r}")
    nbytes = int(meta["nbytes"])
    shape = [int(s) for s in meta["shape"]]
    numel = 1
    for s in shape:
        if s < 0:
            raise DeviceBufferError(f"negative dimension in shape {shape}")
        numel *= s
    elem = torch.empty(0, dtype=dtype).element_size()
    if numel * elem != nbytes or nbytes > buf.nbytes:
        raise DeviceBufferError(f"shape {shape} of {meta['dtype']} does not fit a buffer of {buf.nbytes} bytes")
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype, device=f"cuda:{buf.device}")
    return buf.bytes()[:nbytes].view(dtype).view(shape)


def import_tensor(fd: int, meta: dict, device: int, copy: bool) -> torch.Tensor:
    """The tensor another process exported; with ``copy`` a private copy, and the mapping is released."""
    buf = import_buffer(fd, int(meta["nbytes"]), device)
    view = tensor_view(buf, meta)
    if not copy:
        return view
    private = view.clone()
    del view
    buf.close()
    return private
