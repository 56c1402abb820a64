"""A stand-in for device_transport.VmmBackend on a machine without a GPU, for tests only.

The real backend needs CUDA (cuMemCreate and friends); this one keeps the same contract so the
transport's handling of device buffers can be tested anywhere: every tensor counts as a device
tensor, a "buffer" is an unsealed memfd (like a VMM buffer, its exporter could still write it), and
an import is a private copy. What it cannot show (the driver refusing a foreign descriptor, a copy
between two CUDA contexts) is what bench/device_transport_check.sh runs on a GPU.
"""

import mmap
import os
import stat

import torch

from kforge_worker.exchange import tensors
from kforge_worker.exchange.device_transport import StagedExports


class FakeBuffer:
    def __init__(self, raw: torch.Tensor):
        self.fd = os.memfd_create("fake-device-buffer", os.MFD_CLOEXEC)
        self.nbytes = raw.numel()
        os.ftruncate(self.fd, max(1, raw.numel()))
        self.fill(raw)
        self.closed = False

    def fill(self, raw: torch.Tensor) -> None:
        if raw.numel():
            os.pwrite(self.fd, raw.contiguous().numpy().tobytes(), 0)

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
            self.closed = True


class FakeBackend(StagedExports):
    name = "vmm"

    def __init__(self):
        super().__init__()
        self.exported = []
        self.imports = 0
        self.views = 0
        self.refills = 0
        self.summed = 0  # copies that took their digest sums

    @property
    def staged(self) -> dict:
        return self._staged

    def handles(self, t: torch.Tensor) -> bool:
        return True

    def _copy(self, raw: torch.Tensor, sums=None) -> FakeBuffer:
        buf = FakeBuffer(raw)
        self.exported.append(buf)
        self._sum(raw, sums)
        return buf

    def _fill(self, buf: FakeBuffer, raw: torch.Tensor, sums=None) -> None:
        buf.fill(raw)
        self.refills += 1
        self._sum(raw, sums)

    def _sum(self, raw: torch.Tensor, sums) -> None:
        """The digest sums of what was copied, as the real backend's copy takes them."""
        if sums is not None:
            sums[(raw.data_ptr(), raw.numel())] = tensors.digest(raw)[0][2:]
            self.summed += 1

    def import_view(self, fd: int, nbytes: int) -> torch.Tensor:
        """The buffer itself, shared with its exporter (a VMM mapping in place)."""
        self._check(fd, nbytes)
        self.views += 1
        if not nbytes:
            return torch.empty(0, dtype=torch.uint8)
        return torch.frombuffer(mmap.mmap(fd, nbytes), dtype=torch.uint8, count=nbytes)

    def import_copy(self, fd: int, nbytes: int) -> torch.Tensor:
        self._check(fd, nbytes)
        self.imports += 1
        data = os.pread(fd, nbytes, 0) if nbytes else b""
        return torch.frombuffer(bytearray(data), dtype=torch.uint8) if nbytes else torch.empty(0, dtype=torch.uint8)

    @staticmethod
    def _check(fd: int, nbytes: int) -> None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # the real backend refuses FIFOs, files, folders and sockets
            raise RuntimeError("the descriptor received is not an exported buffer")
        if nbytes > st.st_size:
            raise RuntimeError(f"{nbytes} bytes asked of a buffer of {st.st_size}")
