"""Whether an evaluation's device tensors travel as device buffers, and the backend that moves them.

With ``KFORGE_DEVICE_TRANSPORT=vmm`` (a variable the cuda targets pass to their workers) and a CUDA
device, the reference keeps its trials on the device and every CUDA tensor in a set crosses between
the processes as a CUDA VMM buffer (device_buffers.py) passed by file descriptor next to the set's
sealed memfd: no host copy on either side. Unset, or ``host``, every tensor goes through the memfd as
before. The device path is off by default: it has not yet been proven on a GPU inside evaluations
(bench/device_transport_check.sh is the run that proves it).

A backend exports a storage's bytes into a fresh buffer of its own (never memory of the exporting
process's allocator) and imports a buffer another process sent as a private copy: the sender keeps
its mapping and could go on writing, so nobody reads a received buffer in place.
"""

import os
import stat

import torch

from kforge_worker import device_buffers
from kforge_worker.errors import EnvironmentProblem

ENV = "KFORGE_DEVICE_TRANSPORT"
MODES = ("host", "vmm")


def select(device: str, environ=os.environ) -> str:
    """"vmm" where the variable asks for it and the device is a CUDA device; "host" otherwise."""
    mode = environ.get(ENV, "").strip() or "host"
    if mode not in MODES:
        raise EnvironmentProblem(f"{ENV}={mode!r}: expected one of {', '.join(MODES)}")
    return "vmm" if mode == "vmm" and device.startswith("cuda") else "host"


class VmmBackend:
    """CUDA tensors as VMM buffers on the current CUDA device."""

    name = "vmm"

    def __init__(self, device_index: int):
        self.device = device_index

    def handles(self, t: torch.Tensor) -> bool:
        return t.is_cuda

    def export(self, raw: torch.Tensor) -> device_buffers.DeviceBuffer:
        """A fresh buffer holding ``raw`` (uint8, contiguous); its ``fd`` is sent, its ``close()``
        releases it. The copy is finished before this returns."""
        buf = device_buffers.allocate(raw.numel(), self.device)
        if raw.numel():
            buf.bytes()[: raw.numel()].copy_(raw)
        torch.cuda.synchronize(self.device)
        return buf

    def import_copy(self, fd: int, nbytes: int) -> torch.Tensor:
        """A private uint8 copy of ``nbytes`` of the buffer behind ``fd`` (which stays the caller's).
        A descriptor that is not an exported allocation, or one smaller than ``nbytes``, is refused."""
        if nbytes == 0:
            check_descriptor(fd)
            return torch.empty(0, dtype=torch.uint8, device=f"cuda:{self.device}")
        buf = device_buffers.import_buffer(fd, nbytes, self.device)
        try:
            copy = buf.bytes()[:nbytes].clone()
            torch.cuda.synchronize(self.device)
        finally:
            buf.close()
        return copy


def check_descriptor(fd: int) -> None:
    """What the driver exports is neither a FIFO, a file, a folder nor a socket (import_buffer's test)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISSOCK(mode):
        raise device_buffers.DeviceBufferError("the descriptor received is not an exported CUDA allocation")


def backend(mode: str, device: str):
    """The backend for ``mode`` on ``device``, or None for the host path."""
    if mode != "vmm":
        return None
    index = torch.device(device).index
    return VmmBackend(index if index is not None else torch.cuda.current_device())
