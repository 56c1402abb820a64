"""Device buffers shared by file descriptor (CUDA virtual memory management), for the GPU path of the
tensor exchange (transport.py carries host tensors).

Legacy CUDA IPC handles (cudaIpcGetMemHandle, torch.multiprocessing) do not work across PID
namespaces, where the candidate's sandbox lives, and export the whole caching-allocator segment a
tensor sits in. A buffer made here is allocated on its own (cuMemCreate, never torch's allocator)
with a POSIX file-descriptor handle, so exporting it shares exactly that buffer and nothing else of
the exporting process; the descriptor travels over the exchange's Unix socket like a memfd.

    buf = DeviceBuffer.create(nbytes, device)        # exporter: a fresh buffer, mapped read-write
    buf.tensor(dtype, shape).copy_(t)                 # fill it (a copy, never a view of t)
    fd = buf.export_fd()                              # send with socket.send_fds, then close
    other = DeviceBuffer.import_fd(fd, nbytes, device)  # importer: map the same memory

Unlike a sealed memfd, a device buffer cannot be made read-only to a process that holds its handle
(it can always map it read-write), so the trusted side never reads a buffer it exported after
handing it over, and copies an imported buffer into its own memory before judging it.

Needs an NVIDIA GPU and driver; `available()` says why not otherwise. Checked on the GPU machine by
bench/vmm_transport_check.py.
"""

import ctypes
from typing import Optional

import torch

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103


class VmmError(RuntimeError):
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


_LIB = None


def _cu():
    global _LIB
    if _LIB is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise VmmError(f"the CUDA driver (libcuda.so.1) cannot be loaded: {exc}") from None
        u64, size, vp = ctypes.c_ulonglong, ctypes.c_size_t, ctypes.c_void_p
        lib.cuMemGetAllocationGranularity.argtypes = [ctypes.POINTER(size), ctypes.POINTER(_AllocationProp), ctypes.c_int]
        lib.cuMemCreate.argtypes = [ctypes.POINTER(u64), size, ctypes.POINTER(_AllocationProp), u64]
        lib.cuMemExportToShareableHandle.argtypes = [vp, u64, ctypes.c_int, u64]
        lib.cuMemImportFromShareableHandle.argtypes = [ctypes.POINTER(u64), vp, ctypes.c_int]
        lib.cuMemAddressReserve.argtypes = [ctypes.POINTER(u64), size, size, u64, u64]
        lib.cuMemMap.argtypes = [u64, size, size, u64, u64]
        lib.cuMemSetAccess.argtypes = [u64, size, ctypes.POINTER(_AccessDesc), size]
        lib.cuMemUnmap.argtypes = [u64, size]
        lib.cuMemRelease.argtypes = [u64]
        lib.cuMemAddressFree.argtypes = [u64, size]
        lib.cuDeviceGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _LIB = lib
    return _LIB


def _check(code: int, what: str) -> None:
    if code != 0:
        name = ctypes.c_char_p()
        _cu().cuGetErrorName(code, ctypes.byref(name))
        raise VmmError(f"{what} failed: {(name.value or b'error %d' % code).decode()}")


def available(device: int = 0) -> Optional[str]:
    """None where device buffers can be shared by descriptor here; else why not."""
    if not torch.cuda.is_available():
        return "no CUDA device is visible (torch.cuda.is_available() is False)"
    try:
        _context(device)
        supported = ctypes.c_int()
        _check(_cu().cuDeviceGetAttribute(ctypes.byref(supported),
                                          CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device),
               "cuDeviceGetAttribute")
    except VmmError as exc:
        return str(exc)
    return None if supported.value else f"device {device} cannot export memory as a POSIX file descriptor"


def _context(device: int) -> None:
    """Makes torch's primary context of ``device`` current on this thread (driver calls need one)."""
    torch.cuda.set_device(device)
    torch.empty(1, device=f"cuda:{device}")


def _prop(device: int) -> _AllocationProp:
    prop = _AllocationProp()
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    prop.location = _Location(CU_MEM_LOCATION_TYPE_DEVICE, device)
    return prop


def _rounded(nbytes: int, device: int) -> int:
    granularity = ctypes.c_size_t()
    prop = _prop(device)
    _check(_cu().cuMemGetAllocationGranularity(ctypes.byref(granularity), ctypes.byref(prop),
                                               CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity")
    g = granularity.value
    return max(g, -(-nbytes // g) * g)


class DeviceBuffer:
    """One physical allocation mapped read-write at a virtual range of this process."""

    def __init__(self, handle: int, size: int, device: int):
        self.handle, self.size, self.device = handle, size, device
        self.ptr = 0
        _context(device)
        ptr = ctypes.c_ulonglong()
        _check(_cu().cuMemAddressReserve(ctypes.byref(ptr), size, 0, 0, 0), "cuMemAddressReserve")
        try:
            _check(_cu().cuMemMap(ptr.value, size, 0, handle, 0), "cuMemMap")
            access = _AccessDesc(_Location(CU_MEM_LOCATION_TYPE_DEVICE, device), CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            _check(_cu().cuMemSetAccess(ptr.value, size, ctypes.byref(access), 1), "cuMemSetAccess")
        except VmmError:
            _cu().cuMemUnmap(ptr.value, size)
            _cu().cuMemAddressFree(ptr.value, size)
            _cu().cuMemRelease(handle)
            raise
        self.ptr = ptr.value

    @classmethod
    def create(cls, nbytes: int, device: int = 0) -> "DeviceBuffer":
        """A fresh allocation of at least ``nbytes`` (rounded up to the allocation granularity)."""
        _context(device)
        size = _rounded(nbytes, device)
        handle = ctypes.c_ulonglong()
        prop = _prop(device)
        _check(_cu().cuMemCreate(ctypes.byref(handle), size, ctypes.byref(prop), 0), "cuMemCreate")
        return cls(handle.value, size, device)

    @classmethod
    def import_fd(cls, fd: int, nbytes: int, device: int = 0) -> "DeviceBuffer":
        """The allocation behind a descriptor another process exported; ``nbytes`` as it said."""
        _context(device)
        handle = ctypes.c_ulonglong()
        _check(_cu().cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd),
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
               "cuMemImportFromShareableHandle")
        return cls(handle.value, _rounded(nbytes, device), device)

    def export_fd(self) -> int:
        """A new descriptor for this allocation (the caller sends and closes it)."""
        fd = ctypes.c_int(-1)
        _check(_cu().cuMemExportToShareableHandle(ctypes.byref(fd), self.handle,
                                                  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
               "cuMemExportToShareableHandle")
        return fd.value

    def tensor(self, dtype: torch.dtype, shape, offset: int = 0) -> torch.Tensor:
        """A tensor over this buffer (no copy); valid while the buffer is open."""
        numel = 1
        for n in shape:
            numel *= int(n)
        if offset < 0 or offset + numel * dtype.itemsize > self.size or offset % dtype.itemsize:
            raise VmmError("the tensor does not fit the buffer")
        interface = {"shape": (numel * dtype.itemsize,), "typestr": "|u1", "data": (self.ptr + offset, False),
                     "version": 3, "strides": None}
        holder = type("DevicePointer", (), {"__cuda_array_interface__": interface})()
        raw = torch.as_tensor(holder, device=f"cuda:{self.device}")
        return raw.view(dtype).view(tuple(int(n) for n in shape))

    def close(self) -> None:
        if self.ptr:
            torch.cuda.synchronize(self.device)
            _cu().cuMemUnmap(self.ptr, self.size)
            _cu().cuMemAddressFree(self.ptr, self.size)
            _cu().cuMemRelease(self.handle)
            self.ptr = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
