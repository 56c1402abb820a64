"""Attacks on the reference's end of the transport (docs/isolation.md, "Quotas and cleanup"): a set
whose memfd is far larger than the tensors it describes, and a candidate that holds every connection
of the reference's socket so that the next candidate (the challenger of `kforge run`) cannot load.
The test process plays the trusted reference; the attacks are what a candidate's process can send."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from kforge_worker.exchange import transport

GIB = 1 << 30


def _shmem_resident() -> int:
    """Bytes of shared memory (memfd pages) mapped in by this process (/proc/self/status RssShmem)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssShmem:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssShmem in /proc/self/status")


def _sparse_set(meta: dict, file_bytes: int, data: bytes = b"") -> int:
    """A sealed memfd of ``file_bytes`` (a hole, costing nothing until read) with a description written
    by hand and ``data`` at the start of the data area: what a hostile candidate can put."""
    text = json.dumps(meta).encode()
    header = transport._HEADER.pack(transport._MAGIC, len(text)) + text
    start = -(-len(header) // 64) * 64
    fd = os.memfd_create("sparse", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, file_bytes)
    os.pwrite(fd, header, 0)
    if data:
        os.pwrite(fd, data, start)
    transport._seal(fd)
    return fd


@pytest.fixture
def exchange(tmp_path):
    ex = transport.Exchange(transport.socket_path(str(tmp_path)))
    yield ex
    ex.close()


SMALL = {"storage": 0, "dtype": "float32", "shape": [4], "stride": [1], "offset": 0}


@pytest.mark.parametrize("lie", ["file_past_the_description", "storage_past_its_tensors"])
def test_a_sparse_gib_memfd_costs_the_reference_only_the_bytes_its_tensors_need(exchange, lie):
    """Two sparse 1 GiB sets per case: before, the reference mapped in every page of each (2 GiB of its
    memory); now it maps only what the tensors described need (16 bytes each)."""
    storage = {"offset": 0, "nbytes": 16 if lie == "file_past_the_description" else GIB - 4096}
    values = torch.arange(4, dtype=torch.float32)
    peer = transport.connect(exchange.path)
    before = _shmem_resident()
    got = []
    try:
        for i in range(2):
            fd = _sparse_set({"tree": {"tensor": 0}, "tensors": [SMALL], "storages": [storage]}, GIB,
                             values.numpy().tobytes())
            try:
                reply, fds = peer._ask({"op": "put", "name": f"outputs-{i}"}, [fd])
            finally:
                os.close(fd)
            assert reply["ok"], reply
            got.append(exchange.take(f"outputs-{i}"))
    finally:
        peer.close()
    grown = _shmem_resident() - before
    assert grown < 16 << 20, f"the reference mapped in {grown >> 20} MiB for two 16-byte tensors"
    for tensor in got:
        assert torch.equal(tensor, values)


def test_a_received_set_that_claims_a_huge_tensor_is_not_read_in_on_arrival(exchange):
    """A put is unpacked when it arrives, before anything checks its shape: its pages are read in only
    when the comparison reads them (a wrong-shaped claim never is)."""
    huge = {"storage": 0, "dtype": "float32", "shape": [GIB // 8], "stride": [1], "offset": 0}
    peer = transport.connect(exchange.path)
    before = _shmem_resident()
    try:
        fd = _sparse_set({"tree": {"tensor": 0}, "tensors": [huge], "storages": [{"offset": 0, "nbytes": GIB // 2}]},
                         GIB)
        try:
            reply, _ = peer._ask({"op": "put", "name": "outputs"}, [fd])
        finally:
            os.close(fd)
        assert reply["ok"], reply
        got = exchange.take("outputs")
    finally:
        peer.close()
    assert got.shape == (GIB // 8,)
    assert _shmem_resident() - before < 16 << 20


HOLDER = textwrap.dedent("""
    import sys, time
    from kforge_worker.exchange import transport
    held = []
    while True:  # as many connections as the reference lets it keep
        try:
            held.append(transport.connect(sys.argv[1]))
        except Exception:
            break
        if len(held) >= 64:
            break
    print(len(held), flush=True)
    time.sleep(120)
""")
# The same from PID namespaces the candidate makes inside its own, one per connection.
NESTED_HOLDER = textwrap.dedent("""
    import subprocess, sys, time
    hold = "import sys, time; from kforge_worker.exchange import transport; p = transport.connect(sys.argv[1]); " \
           "print('held', flush=True); time.sleep(120)"
    children = [subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", sys.executable, "-c", hold, sys.argv[1]],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for _ in range(24)]
    held = sum(1 for c in children if c.stdout.readline().strip() == "held")
    print(held, flush=True)
    time.sleep(120)
""")
CHALLENGER = textwrap.dedent("""
    import sys
    from kforge_worker.exchange import transport
    peer = transport.connect(sys.argv[1])
    print(peer.device_transport, flush=True)
""")


def _in_own_pid_namespace(script: str, path: str, **kwargs) -> subprocess.Popen:
    """``script`` in a PID namespace of its own, as every sandboxed candidate is."""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(transport.__file__)))}
    return subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", sys.executable, "-c", script, path],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _can_unshare_pid() -> bool:
    if not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_unshare_pid(), reason="needs `unshare --pid` (root, or user namespaces)")
@pytest.mark.parametrize("how", ["one_namespace", "nested_namespaces"])
def test_a_candidate_that_holds_the_socket_leaves_the_challenger_its_own_connections(exchange, how):
    """`kforge run`: the current best loads first and connects as often as it can (from namespaces of
    its own making too); the challenger, in a sandbox (PID namespace) of its own, still connects."""
    holder = _in_own_pid_namespace(HOLDER if how == "one_namespace" else NESTED_HOLDER, exchange.path)
    try:
        held = int(holder.stdout.readline() or 0)
        assert held >= 1, holder.stderr.read()
        assert held <= transport.Exchange.MAX_CONNECTIONS
        time.sleep(0.2)  # the refused ones are closed, the kept ones served
        challenger = _in_own_pid_namespace(CHALLENGER, exchange.path)
        out, err = challenger.communicate(timeout=60)
        assert challenger.returncode == 0, err[-2000:]
        assert out.strip() == "host"
    finally:
        holder.kill()
        holder.wait()
