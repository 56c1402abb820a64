"""Device buffers shared by descriptor: need a GPU (bench/vmm_transport_check.py is the full check)."""

import os

import pytest
import torch

from kforge_worker import vmm

WHY = vmm.available() if torch.cuda.is_available() else "no CUDA device: device buffers need a GPU"
pytestmark = pytest.mark.skipif(WHY is not None, reason=str(WHY))


def test_a_buffer_exported_and_imported_in_one_process_shares_its_memory():
    with vmm.DeviceBuffer.create(1 << 20) as buf:
        buf.tensor(torch.float32, [1024]).fill_(3.0)
        fd = buf.export_fd()
        try:
            with vmm.DeviceBuffer.import_fd(fd, 1 << 20) as other:
                assert other.ptr != buf.ptr
                assert bool((other.tensor(torch.float32, [1024]) == 3.0).all())
        finally:
            os.close(fd)


def test_a_tensor_must_fit_its_buffer():
    with vmm.DeviceBuffer.create(4096) as buf:
        with pytest.raises(vmm.VmmError):
            buf.tensor(torch.float32, [buf.size])
