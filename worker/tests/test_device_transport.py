"""Sets with device buffers: the description, what a reader refuses, the exchange and the selection.

No GPU is needed: fake_device_backend.FakeBackend stands in for the CUDA VMM backend (it treats every
tensor as a device tensor and passes memfds as buffers). The real backend's round trip between two
processes is test_device_buffers.py's GPU test and bench/device_transport_check.sh.
"""

import json
import os

import pytest
import torch

from fake_device_backend import FakeBackend
from kforge_worker.exchange import device_buffers, device_transport, transport
from kforge_worker.common.errors import EnvironmentProblem


def test_the_device_transport_is_on_for_a_cuda_device_that_can_share_buffers():
    can, cannot = (lambda index: True), (lambda index: False)
    assert device_transport.select("cuda:0", {}, can) == "vmm"
    assert device_transport.select("cuda:0", {}, cannot) == "host"  # no VMM or no POSIX-fd handles
    assert device_transport.select("cuda:0", {"KFORGE_DEVICE_TRANSPORT": "host"}, can) == "host"
    assert device_transport.select("cuda:1", {"KFORGE_DEVICE_TRANSPORT": "vmm"}, cannot) == "vmm"
    assert device_transport.select("cpu", {}, can) == "host"
    assert device_transport.select("cpu", {"KFORGE_DEVICE_TRANSPORT": "vmm"}, can) == "host"
    with pytest.raises(EnvironmentProblem, match="expected one of host, vmm"):
        device_transport.select("cuda", {"KFORGE_DEVICE_TRANSPORT": "ipc"})
    assert device_transport.backend("host", "cuda:0") is None


def test_a_trial_too_large_for_the_device_path_goes_through_the_host():
    can = lambda index: True
    gb = 1 << 30
    relu_full = {"input_bytes": 6 * gb, "output_bytes": 6 * gb, "forward_peak_bytes": 6 * gb}  # 19_ReLU's own size
    relu_512 = {"input_bytes": gb * 3 // 4, "output_bytes": gb * 3 // 4}
    sum_full = {"input_bytes": 8 * gb, "output_bytes": 1 << 20, "forward_peak_bytes": 1 << 20}  # 47_Sum_reduction
    avg_pool_full = {"input_bytes": 16 * gb, "output_bytes": 15 * gb, "forward_peak_bytes": 15 * gb}  # 45_Average_Pooling_2D
    free = 79 * gb  # an 80 GB H100
    assert device_transport.lean(relu_full) and not device_transport.lean(relu_512)
    rmsnorm_full = {"input_bytes": 7 * gb, "output_bytes": 7 * gb, "forward_peak_bytes": 7 * gb + (1 << 27)}  # 36_RMSNorm_
    assert device_transport.device_bytes(relu_full) == 54 * gb  # 5 I + 4 O
    assert device_transport.device_bytes(relu_512) == 33 * gb // 2  # 11 I + 11 O
    for fits in (relu_full, relu_512, sum_full, rmsnorm_full):
        assert device_transport.fits_on_device(fits, free)
    assert not device_transport.fits_on_device(avg_pool_full, free)
    assert not device_transport.fits_on_device(relu_full, 50 * gb)
    assert device_transport.select("cuda:0", {}, can, lambda: False) == "host"
    assert device_transport.select("cuda:0", {}, can, lambda: True) == "vmm"
    assert device_transport.select("cuda:0", {"KFORGE_DEVICE_TRANSPORT": "vmm"}, can, lambda: False) == "vmm"


def test_a_machine_without_the_cuda_driver_cannot_share_device_buffers():
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the GPU test of test_device_buffers.py covers it")
    assert device_buffers.supported(0) is False


def test_device_storages_travel_as_buffers_with_strides_aliasing_and_values():
    backend = FakeBackend()
    x = torch.randn(4, 6)
    sent = {"a": [x, x.t(), x[1:3], 3], "b": (torch.arange(5), torch.zeros(0))}
    fd, buffers = transport.pack_set(sent, backend)
    try:
        meta = _description(fd)
        # Three storages (x and its views share one; the empty one none), each in a buffer of its own;
        # the memfd holds the description only.
        assert [p.get("buffer") for p in meta["storages"]] == [0, 1, 2]
        assert os.fstat(fd).st_size < 4096
        got = transport.unpack_set(fd, [b.fd for b in buffers], backend)
    finally:
        os.close(fd)
        for b in buffers:
            b.close()
    assert got["a"][1].stride() == (1, 6) and torch.equal(got["a"][1], x.t())
    assert torch.equal(got["a"][2], x[1:3]) and got["a"][2].storage_offset() == 6 and got["a"][3] == 3
    assert got["a"][0].untyped_storage().data_ptr() == got["a"][1].untyped_storage().data_ptr()
    assert torch.equal(got["b"][0], torch.arange(5)) and got["b"][1].shape == (0,)


def test_a_reader_holds_a_private_copy_the_writer_can_no_longer_change():
    backend = FakeBackend()
    fd, buffers = transport.pack_set([torch.ones(16)], backend)
    try:
        got = transport.unpack_set(fd, [buffers[0].fd], backend)
        os.pwrite(buffers[0].fd, b"\xff" * 64, 0)  # the exporter writes its buffer afterwards
        assert torch.equal(got[0], torch.ones(16))
    finally:
        os.close(fd)
        buffers[0].close()


def test_a_set_read_in_place_is_the_writers_buffer_and_copies_nothing():
    backend = FakeBackend()
    fd, buffers = transport.pack_set([torch.ones(16)], backend)
    try:
        got = transport.unpack_set(fd, [buffers[0].fd], backend, in_place=True)
        assert (backend.views, backend.imports) == (1, 0)
        got[0].mul_(3)  # a call that works on its inputs in place writes the buffer it was served
        assert torch.equal(torch.frombuffer(bytearray(os.pread(buffers[0].fd, 64, 0)), dtype=torch.float32),
                           torch.full((16,), 3.0))
    finally:
        os.close(fd)
        buffers[0].close()


def test_a_staged_storage_is_sent_as_it_was_when_staged_in_the_buffer_made_then():
    backend = FakeBackend()
    out = torch.arange(8, dtype=torch.float32)
    backend.stage([None, out])
    out.add_(100)  # kforge stages snapshots, which nothing changes; the copy is what was staged
    fd, buffers = transport.pack_set({"outputs": out}, backend)
    try:
        assert len(backend.exported) == 1 and buffers[0] is backend.exported[0] and backend.staged == {}
        got = transport.unpack_set(fd, [buffers[0].fd], backend)
    finally:
        os.close(fd)
        buffers[0].close()
    assert torch.equal(got["outputs"], torch.arange(8, dtype=torch.float32))
    backend.stage([torch.ones(4)])
    backend.discard_staged()  # staged but never sent: released
    assert backend.staged == {} and backend.exported[-1].closed


def test_more_device_storages_than_a_message_carries_go_through_the_memfd():
    backend = FakeBackend()
    sent = [torch.full((2,), float(i)) for i in range(transport.MAX_BUFFERS + 3)]
    fd, buffers = transport.pack_set(sent, backend)
    try:
        assert len(buffers) == transport.MAX_BUFFERS
        got = transport.unpack_set(fd, [b.fd for b in buffers], backend)
    finally:
        os.close(fd)
        for b in buffers:
            b.close()
    assert all(torch.equal(g, s) for g, s in zip(got, sent))


def _description(fd: int) -> dict:
    _, meta_len = transport._HEADER.unpack(os.pread(fd, transport._HEADER.size, 0))
    return json.loads(os.pread(fd, meta_len, transport._HEADER.size))


def _forged(meta: dict) -> int:
    import fcntl

    text = json.dumps(meta).encode()
    fd = os.memfd_create("forged", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 4096)
    os.pwrite(fd, transport._HEADER.pack(transport._MAGIC, len(text)) + text, 0)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, transport.SEALS)
    return fd


def test_hostile_device_descriptions_are_refused(tmp_path):
    backend = FakeBackend()
    buf = backend.export(torch.zeros(64, dtype=torch.uint8))
    one = {"storage": 0, "dtype": "float32", "shape": [16], "stride": [1], "offset": 0}
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    fifo_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    cases = [
        ({"storages": [{"buffer": 0, "nbytes": 64}]}, [], "names device buffers"),  # none sent
        ({"storages": [{"buffer": 0, "nbytes": 64}]}, [buf.fd, buf.fd], "names device buffers"),  # one too many
        ({"storages": [{"buffer": 1, "nbytes": 64}]}, [buf.fd], "names device buffers"),  # out of order
        ({"storages": [{"buffer": 0, "nbytes": 4096}]}, [buf.fd], "not a tensor set"),  # more than it holds
        ({"storages": [{"buffer": 0, "nbytes": -1}]}, [buf.fd], "not a tensor set"),
        ({"storages": [{"buffer": "0", "nbytes": 64}]}, [buf.fd], "not a tensor set"),
        ({"storages": [{"buffer": 0, "nbytes": 64}]}, [fifo_fd], "not a tensor set"),  # a FIFO would block
        ({"storages": [{"buffer": 0, "nbytes": 32}], "tensors": [one]}, [buf.fd], "reaches past"),
    ]
    try:
        for meta, fds, why in cases:
            fd = _forged({"tree": {"tensor": 0}, "tensors": [one], **meta})
            try:
                with pytest.raises(transport.TransportError, match=why):
                    transport.unpack_set(fd, fds, backend)
            finally:
                os.close(fd)
        # Without a device backend (the host path) a set naming buffers is refused outright.
        fd = _forged({"tree": {"tensor": 0}, "tensors": [one], "storages": [{"buffer": 0, "nbytes": 64}]})
        with pytest.raises(transport.TransportError, match="host memory only"):
            transport.unpack_set(fd, [buf.fd], None)
        os.close(fd)
    finally:
        os.close(fifo_fd)
        buf.close()


def test_the_real_backend_refuses_a_fifo_a_file_or_a_socket_before_the_driver(tmp_path):
    plain = tmp_path / "plain"
    plain.write_bytes(b"x" * 64)
    fd = os.open(plain, os.O_RDONLY)
    try:
        with pytest.raises(device_buffers.DeviceBufferError, match="not an exported CUDA allocation"):
            device_transport.VmmBackend(0).import_copy(fd, 0)  # even an empty buffer's descriptor is checked
        with pytest.raises(device_buffers.DeviceBufferError, match="not an exported CUDA allocation"):
            device_transport.VmmBackend(0).import_copy(fd, 64)
    finally:
        os.close(fd)


@pytest.fixture
def device_exchange(tmp_path):
    backend = FakeBackend()
    ex = transport.Exchange(transport.socket_path(str(tmp_path)), backend)
    yield ex, backend
    ex.close()


def test_the_exchange_serves_device_sets_and_copies_what_a_peer_puts_on_arrival(device_exchange):
    exchange, backend = device_exchange
    assert exchange.publish("inputs_main_0", [torch.arange(8.0)], device=True) is None  # never read back
    assert exchange.publish("init_main", [torch.ones(2)]) is not None  # host sets as before
    peer = transport.connect(exchange.path, lambda mode: backend if mode == "vmm" else None)
    try:
        assert peer.device_transport == "vmm"
        got = peer.get("inputs_main_0")[0]
        assert torch.equal(got, torch.arange(8.0))
        exported = len(backend.exported)
        peer.put("out_0", {"outputs": [got * 2]})
        put = backend.exported[exported:]
        assert put and all(b.closed for b in put)  # the reference copied before the peer heard back
    finally:
        peer.close()
    assert torch.equal(exchange.take("out_0")["outputs"][0], torch.arange(8.0) * 2)
    served = exchange._published["inputs_main_0"].buffers
    exchange.unpublish("inputs_main_0")
    assert all(b.closed for b in served)
    peer = transport.connect(exchange.path, lambda mode: backend)
    try:
        with pytest.raises(transport.TransportError, match="no set named"):
            peer.get("inputs_main_0")
    finally:
        peer.close()


def test_a_set_served_once_lends_its_buffers_to_the_next_and_only_to_sets_that_reuse(device_exchange):
    exchange, backend = device_exchange
    exchange.publish("inputs_main_0", [torch.arange(8.0), torch.ones(3)], device=True, reuse=True)
    first = exchange._published["inputs_main_0"].buffers
    exchange.unpublish("inputs_main_0", recycle=True)  # its check: the candidate's call is over
    assert not any(b.closed for b in first)
    # A timing set (no reuse) never gets them: the candidate may still map them.
    exchange.publish("inputs_main_2000", [torch.arange(8.0) + 5], device=True)
    assert exchange._published["inputs_main_2000"].buffers[0] not in first
    # The next trial's set takes the one of its size, refilled; the other goes when the next set is
    # recycled or the spares are dropped.
    made = len(backend.exported)
    exchange.publish("inputs_main_1", [torch.arange(8.0) * 7], device=True, reuse=True)
    assert exchange._published["inputs_main_1"].buffers == [first[0]]
    assert len(backend.exported) == made and backend.refills == 1
    peer = transport.connect(exchange.path, lambda mode: backend)
    try:
        assert torch.equal(peer.get("inputs_main_1")[0], torch.arange(8.0) * 7)
    finally:
        peer.close()
    assert not first[1].closed
    exchange.drop_spares()
    assert first[1].closed and not first[0].closed
    exchange.unpublish("inputs_main_1")  # not recycled: released
    assert first[0].closed


def test_a_host_exchange_tells_its_peer_and_refuses_device_buffers(tmp_path):
    exchange = transport.Exchange(transport.socket_path(str(tmp_path)))
    backend = FakeBackend()
    try:
        peer = transport.connect(exchange.path, lambda mode: backend)
        assert peer.device_transport == "host" and peer.backend is None
        fd, buffers = transport.pack_set({"outputs": [torch.ones(4)]}, backend)
        reply, _ = peer._ask({"op": "put", "name": "out_0"}, [fd] + [b.fd for b in buffers])
        os.close(fd)
        peer.close()
        assert reply["ok"]  # accepted for reading; reading it fails, as for any unreadable set
        with pytest.raises(transport.TransportError, match="host memory only"):
            exchange.take("out_0")
    finally:
        exchange.close()


PEER = """
import sys, torch
from kforge_worker.exchange import device_transport, transport
peer = transport.connect(sys.argv[1], lambda mode: device_transport.backend(mode, "cuda:0"))
assert peer.device_transport == "vmm", peer.device_transport
x, y = peer.get("inputs_main_0", in_place=True)  # the reference's buffers, mapped where they are
assert x.is_cuda and y.is_cuda
out = torch.relu(x) + y[:, :1]
x.zero_()  # a call that works on its inputs in place: only the buffer it was served changes
peer.backend.stage([out])
assert len(peer.backend._staged) == 1
peer.put("out_0", {"outputs": out, "host": torch.ones(2)})
assert not peer.backend._staged  # the staged buffer is the one sent
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: the real VMM backend needs one")
def test_device_sets_cross_to_another_process_and_back_on_a_gpu(tmp_path):
    import subprocess
    import sys

    exchange = transport.Exchange(transport.socket_path(str(tmp_path)), device_transport.backend("vmm", "cuda:0"))
    try:
        x = torch.randn(256, 1024, device="cuda")
        y = torch.randn(1024, 256, device="cuda").t()  # strided: the storage travels, the view is rebuilt
        assert exchange.publish("inputs_main_0", [x, y], device=True) is None
        env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(transport.__file__)))}
        run = subprocess.run([sys.executable, "-c", PEER, exchange.path], capture_output=True, text=True, env=env,
                             timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        got = exchange.take("out_0")
        assert got["outputs"].is_cuda and not got["host"].is_cuda
        assert torch.equal(got["outputs"], torch.relu(x) + y[:, :1])
        assert x.abs().sum() > 0  # the reference's own tensor, not the buffer the peer zeroed
    finally:
        exchange.close()
