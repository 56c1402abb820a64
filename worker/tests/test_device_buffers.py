"""Device buffers shared by file descriptor: what is refused before the driver sees it runs anywhere;
the round trip between two processes needs a CUDA GPU (bench/vmm_transport_check.py runs it in the
candidate sandbox)."""

import json
import os
import socket
import subprocess
import sys

import pytest
import torch

from kforge_worker.exchange import device_buffers as db


def test_a_fifo_or_a_file_is_refused_before_the_driver_sees_it(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    plain = tmp_path / "plain"
    plain.write_bytes(b"x" * 64)
    for path in (fifo, plain):
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            with pytest.raises(db.DeviceBufferError, match="not an exported CUDA allocation"):
                db.import_buffer(fd, 16, 0)
        finally:
            os.close(fd)
    a, b = socket.socketpair()
    with a, b, pytest.raises(db.DeviceBufferError, match="not an exported CUDA allocation"):
        db.import_buffer(a.fileno(), 16, 0)


def test_a_shape_that_does_not_fit_the_buffer_is_refused():
    buf = db.DeviceBuffer(handle=0, ptr=0, size=0, nbytes=16, device=0)  # never mapped: nothing to release
    for meta, reason in (({"dtype": "float32", "shape": [8], "nbytes": 32}, "does not fit"),
                         ({"dtype": "float32", "shape": [4], "nbytes": 8}, "does not fit"),
                         ({"dtype": "float32", "shape": [-4], "nbytes": 16}, "negative dimension"),
                         ({"dtype": "Tensor", "shape": [4], "nbytes": 16}, "unknown dtype")):
        with pytest.raises(db.DeviceBufferError, match=reason):
            db.tensor_view(buf, meta)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: torch.cuda.is_available() is False")
def test_a_data_centre_gpu_shares_buffers_so_evaluations_use_the_device_path():
    from kforge_worker.exchange import device_transport
    assert db.supported(torch.cuda.current_device())
    assert device_transport.select("cuda", {}) == "vmm"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: torch.cuda.is_available() is False")
def test_a_tensor_crosses_to_another_process_and_back():
    x = torch.randn(1 << 20, device="cuda")
    buf, meta = db.export_tensor(x)
    parent, child = socket.socketpair()
    code = ("import json, os, socket, sys, torch; from kforge_worker.exchange import device_buffers as db\n"
            "s = socket.socket(fileno=int(sys.argv[1])); msg, fds, _, _ = socket.recv_fds(s, 4096, 1)\n"
            "x = db.import_tensor(fds[0], json.loads(msg), 0, copy=True); b, m = db.export_tensor(x * 2)\n"
            "socket.send_fds(s, [json.dumps(m).encode()], [b.fd])\n")
    worker_dir = os.path.dirname(os.path.dirname(os.path.dirname(db.__file__)))
    env = {**os.environ, "PYTHONPATH": worker_dir}
    proc = subprocess.Popen([sys.executable, "-c", code, str(child.fileno())], pass_fds=[child.fileno()], env=env)
    child.close()
    socket.send_fds(parent, [json.dumps(meta).encode()], [buf.fd])
    buf.close()
    msg, fds, _, _ = socket.recv_fds(parent, 4096, 1)
    y = db.import_tensor(fds[0], json.loads(msg), 0, copy=True)
    os.close(fds[0])
    assert proc.wait(timeout=120) == 0
    assert torch.equal(y, x * 2)
