"""Sealed memfds between the reference and the candidate: what travels, and what nobody can change."""

import errno
import fcntl
import json
import mmap
import os
import socket
import subprocess
import sys
import textwrap

import pytest
import torch

from kforge_worker.exchange import transport


def test_a_set_comes_back_with_its_structure_strides_aliasing_and_values():
    x = torch.randn(4, 6)
    sent = {"a": [x, x.t(), x[1:3], 3, 2.5, None, "text", True],
            "b": (torch.arange(5), torch.zeros(0), torch.ones(3, dtype=torch.bfloat16)),
            7: torch.tensor([True, False])}
    fd = transport.pack(sent)
    try:
        got = transport.unpack(fd)
    finally:
        os.close(fd)
    assert got["a"][1].stride() == (1, 6) and torch.equal(got["a"][1], x.t())
    assert torch.equal(got["a"][2], x[1:3]) and got["a"][2].storage_offset() == 6
    assert got["a"][3:] == [3, 2.5, None, "text", True]
    assert isinstance(got["b"], tuple) and got["b"][2].dtype == torch.bfloat16 and got["b"][1].shape == (0,)
    assert torch.equal(got[7], torch.tensor([True, False]))
    # Views of one storage stay views of one storage (the candidate's aliasing facts depend on it).
    assert got["a"][0].untyped_storage().data_ptr() == got["a"][1].untyped_storage().data_ptr()
    assert got["a"][0].untyped_storage().data_ptr() != got["b"][0].untyped_storage().data_ptr()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: device storages go into the memfd through a mapping")
def test_device_tensors_are_copied_into_the_sealed_memfd_as_they_are():
    x = torch.randn(3, 1000, device="cuda")
    sent = [x, x[:, 7:], torch.arange(10, device="cuda", dtype=torch.int16), torch.ones(5)]
    fd = transport.pack(sent)
    try:
        transport.check_sealed(fd)
        got = transport.unpack(fd)
    finally:
        os.close(fd)
    assert all(t.device.type == "cpu" for t in got)
    assert torch.equal(got[0], x.cpu()) and torch.equal(got[1], x.cpu()[:, 7:])
    assert got[0].untyped_storage().data_ptr() == got[1].untyped_storage().data_ptr()  # one storage, as sent
    assert torch.equal(got[2], torch.arange(10, dtype=torch.int16)) and torch.equal(got[3], torch.ones(5))


def test_the_writer_memory_is_never_shared_and_the_reader_writes_only_its_own_copy():
    x = torch.randn(1000)
    fd = transport.pack([x])
    try:
        first = transport.unpack(fd)[0]
        assert first.data_ptr() != x.data_ptr()
        x.zero_()  # the writer changes its own tensor: the set does not follow
        first.fill_(7.0)  # the reader writes its view: copy on write, the memfd stays as packed
        again = transport.unpack(fd)[0]
    finally:
        os.close(fd)
    assert not torch.equal(again, x) and not torch.equal(again, first) and bool((again != 7.0).all())


def _sealed_set():
    return transport.pack([torch.arange(1024, dtype=torch.float32)])


def test_seals_refuse_every_way_of_writing_a_set():
    fd = _sealed_set()
    try:
        size = os.fstat(fd).st_size
        with pytest.raises(PermissionError):
            os.pwrite(fd, b"x", 100)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 0)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, size * 2)
        with pytest.raises(PermissionError):
            mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        with pytest.raises(PermissionError):  # reopened by path: the seals belong to the file
            reopened = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)
            try:
                os.pwrite(reopened, b"x", 100)
            finally:
                os.close(reopened)
        with pytest.raises(PermissionError):
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, 0)  # F_SEAL_SEAL: the seals cannot change any more
        # A read-only shared mapping made now cannot be turned writable.
        ro = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        with pytest.raises(TypeError):
            ro[0:1] = b"x"
        ro.close()
        assert torch.equal(transport.unpack(fd)[0], torch.arange(1024, dtype=torch.float32))
    finally:
        os.close(fd)


def test_an_unsealed_memfd_a_pipe_and_a_lying_description_are_refused():
    unsealed = os.memfd_create("x", os.MFD_ALLOW_SEALING)
    os.ftruncate(unsealed, 4096)
    with pytest.raises(transport.TransportError, match="not sealed"):
        transport.unpack(unsealed)
    os.close(unsealed)
    r, w = os.pipe()
    with pytest.raises(transport.TransportError, match="not a memfd"):
        transport.unpack(r)
    os.close(r), os.close(w)
    for lie in ({"storage": 0, "dtype": "float32", "shape": [2000], "stride": [1], "offset": 0},
                {"storage": 0, "dtype": "float32", "shape": [2], "stride": [-1], "offset": 0},
                {"storage": 0, "dtype": "object", "shape": [2], "stride": [1], "offset": 0},
                {"storage": 3, "dtype": "float32", "shape": [2], "stride": [1], "offset": 0}):
        fd = _forged({"tree": {"tensor": 0}, "tensors": [lie], "storages": [{"offset": 0, "nbytes": 4096}]}, 4096)
        with pytest.raises(transport.TransportError):
            transport.unpack(fd)
        os.close(fd)
    fd = _forged({"tree": {"tensor": 0}, "tensors": [], "storages": [{"offset": 0, "nbytes": 1 << 40}]}, 4096)
    with pytest.raises(transport.TransportError, match="outside"):
        transport.unpack(fd)
    os.close(fd)


def _forged(meta: dict, data_bytes: int) -> int:
    """A sealed memfd with a description written by hand (what a hostile candidate could send)."""
    text = json.dumps(meta).encode()
    header = transport._HEADER.pack(transport._MAGIC, len(text)) + text
    start = -(-len(header) // 64) * 64
    fd = os.memfd_create("forged", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, start + data_bytes)
    os.pwrite(fd, header, 0)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, transport.SEALS)
    return fd


@pytest.fixture
def exchange(tmp_path):
    ex = transport.Exchange(transport.socket_path(str(tmp_path)))
    yield ex
    ex.close()


def test_inputs_are_fetched_and_outputs_put_back_once(exchange):
    before = exchange.publish("inputs_main_0", [torch.ones(3)])
    peer = transport.connect(exchange.path)
    try:
        assert torch.equal(peer.get("inputs_main_0")[0], before[0])
        with pytest.raises(transport.TransportError, match="no set named"):
            peer.get("inputs_main_1")
        peer.put("token-outputs_main_0", {"outputs": [torch.full((3,), 2.0)]})
        with pytest.raises(transport.TransportError, match="already put"):
            peer.put("token-outputs_main_0", {"outputs": [torch.zeros(3)]})
    finally:
        peer.close()
    assert torch.equal(exchange.take("token-outputs_main_0")["outputs"][0], torch.full((3,), 2.0))
    assert exchange.take("token-outputs_main_0") is None  # taken once
    assert exchange.take("never-put") is None


def test_a_folder_path_longer_than_a_socket_address_still_works(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    ex = transport.Exchange(transport.socket_path(str(deep)))
    try:
        ex.publish("x", [torch.ones(2)])
        peer = transport.connect(ex.path)
        assert torch.equal(peer.get("x")[0], torch.ones(2))
        peer.close()
    finally:
        ex.close()


def test_an_unsealed_put_is_refused_and_one_peer_cannot_crowd_out_another(exchange):
    flood = transport.connect(exchange.path)
    other = transport.connect(exchange.path)
    try:
        unsealed = os.memfd_create("x", os.MFD_ALLOW_SEALING)
        reply, _ = flood._ask({"op": "put", "name": "a"}, [unsealed])
        os.close(unsealed)
        assert not reply["ok"] and "not sealed" in reply["error"]
        for i in range(transport.Exchange.MAX_RECEIVED):
            flood.put(f"junk-{i}", [torch.zeros(1)])
        with pytest.raises(transport.TransportError, match="too many"):
            flood.put("junk-more", [torch.zeros(1)])
        other.put("secret-outputs_main_0", {"outputs": [torch.ones(1)]})  # its own quota
    finally:
        flood.close(), other.close()
    assert torch.equal(exchange.take("secret-outputs_main_0")["outputs"][0], torch.ones(1))


ATTACKER = textwrap.dedent("""
    import ctypes, json, mmap, os, socket, sys
    from kforge_worker.exchange import transport
    peer = transport.connect(sys.argv[1])
    x = peer.get("inputs_main_0")[0]
    x.fill_(-1.0)  # its own copy-on-write view: allowed, and invisible to everyone else
    socket.send_fds(peer._sock, [json.dumps({"op": "get", "name": "inputs_main_0"}).encode()], [])
    _, fds, _, _ = socket.recv_fds(peer._sock, 4096, 1)
    fd = fds[0]
    size = os.fstat(fd).st_size
    results = {}
    def attempt(name, fn):
        try:
            fn()
            results[name] = "succeeded"
        except OSError as exc:
            results[name] = exc.strerror
    attempt("pwrite", lambda: os.pwrite(fd, b"\\xff" * 64, size - 64))
    attempt("ftruncate", lambda: os.ftruncate(fd, 0))
    attempt("mmap shared writable", lambda: mmap.mmap(fd, size, flags=mmap.MAP_SHARED,
                                                      prot=mmap.PROT_READ | mmap.PROT_WRITE))
    attempt("reopen read-write and write",
            lambda: os.pwrite(os.open(f"/proc/self/fd/{fd}", os.O_RDWR), b"\\xff" * 64, size - 64))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    ro = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    def mprotect():
        if libc.mprotect(ctypes.c_void_p(ro), size, mmap.PROT_READ | mmap.PROT_WRITE) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    attempt("mprotect a shared mapping writable", mprotect)
    def proc_mem():
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(ro + size - 64)
            mem.write(b"\\xff" * 64)
    attempt("write through /proc/self/mem", proc_mem)
    print(json.dumps(results))
""")


def test_a_separate_process_cannot_change_the_set_it_was_handed(exchange):
    """The attack of tests/adversarial/sandbox/input_mapping_write.py, without the sandbox: whatever
    the receiving process tries, the reference's view stays as published."""
    sent = torch.randn(4096)
    view = exchange.publish("inputs_main_0", [sent])
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(transport.__file__)))}
    run = subprocess.run([sys.executable, "-c", ATTACKER, exchange.path], capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout.strip().splitlines()[-1])
    assert results.pop("write through /proc/self/mem") in ("Bad address", "Input/output error", "Operation not permitted")
    assert set(results.values()) <= {"Operation not permitted", "Permission denied"}, results
    assert torch.equal(view[0], sent)
    peer = transport.connect(exchange.path)
    try:
        assert torch.equal(peer.get("inputs_main_0")[0], sent)
    finally:
        peer.close()


def test_a_transient_ebusy_when_sealing_is_retried_and_a_lasting_one_reported(monkeypatch):
    real = transport.fcntl.fcntl
    refusals = {"left": 2}

    def busy_then_real(fd, cmd, arg=0):
        if cmd == transport.fcntl.F_ADD_SEALS and refusals["left"] > 0:
            refusals["left"] -= 1
            raise OSError(errno.EBUSY, "Device or resource busy")
        return real(fd, cmd, arg)

    monkeypatch.setattr(transport.fcntl, "fcntl", busy_then_real)
    fd, _ = transport.pack_set([torch.arange(6.0)], None)
    try:
        assert real(fd, transport.fcntl.F_GET_SEALS) & transport.SEALS == transport.SEALS
        assert refusals["left"] == 0
    finally:
        os.close(fd)
    refusals["left"] = 100
    with pytest.raises(OSError) as refused:
        transport.pack_set([torch.arange(6.0)], None)
    assert refused.value.errno == errno.EBUSY


def _resident_bytes(address: int) -> int:
    """Rss of the mapping of this process that holds ``address`` (/proc/self/smaps)."""
    with open("/proc/self/smaps") as smaps:
        inside = False
        for line in smaps:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                low, high = (int(x, 16) for x in head.split("-"))
                inside = low <= address < high
            elif inside and head == "Rss:":
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.parametrize("madvise_works", [True, False])
def test_a_received_set_is_mapped_in_before_anything_reads_it(monkeypatch, madvise_works):
    """No first-touch page faults left for a timed call: every page of the set is resident in the
    reader's mapping as soon as it is unpacked (with MADV_POPULATE_READ, or the page-by-page read
    kernels before 5.14 fall back to)."""
    if not madvise_works:
        monkeypatch.setattr(transport, "_MADV_POPULATE_READ", -1)  # EINVAL, as from an older kernel
    x = torch.randn(1 << 20)  # 4 MiB
    fd = transport.pack([x])
    try:
        got = transport.unpack(fd)[0]
    finally:
        os.close(fd)
    assert _resident_bytes(got.data_ptr()) >= x.numel() * 4
    assert torch.equal(got, x)


def test_packing_a_set_leaves_nothing_for_the_cyclic_collector():
    """What a set's packing made goes when it returns: a cycle through its nested helper kept every
    storage of the set (a trial's outputs, on the CPU target a GB each) until the collector ran."""
    import gc

    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        fd, buffers = transport.pack_set([torch.randn(64), {"a": torch.ones(3)}, (1, "x")], None)
        os.close(fd)
        assert buffers == []
        gc.collect()
        assert gc.garbage == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
