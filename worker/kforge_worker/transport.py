"""Host tensors between the reference and the candidate process: sealed memfds over a Unix socket.

A set of tensors (lists, tuples and dicts of tensors and plain values) travels as one memfd: a
header, the set's description as JSON (dtype, shape, strides and storage offset of each tensor) and
the bytes of each storage. The writer copies into a fresh memfd (never a mapping of its own memory)
and seals it (no write, shrink or grow, no seal removed), so the reader can map it without copying:
nobody, the writer included, can change what the reader sees. A reader maps a set privately
(copy on write): tensors are writable, but writes stay in the reader's process.

The reference publishes sets under names; the candidate fetches them and puts its outputs back under
names kforge gives it, over a SOCK_SEQPACKET socket the reference listens on in the evaluation's
shared folder (read-only in the candidate's sandbox; a socket can still be connected to there).
docs/isolation.md says why the socket lives there.
"""

import fcntl
import itertools
import json
import mmap
import os
import socket
import stat
import struct
import threading
from typing import Dict, Optional

import torch

SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL
SOCKET_NAME = "transport.sock"
_MAGIC = b"KFTS0001"
_HEADER = struct.Struct("<8sQ")  # magic, length of the JSON description
_ALIGN = 64
_MAX_META = 16 << 20
_MAX_DIMS = 64
_MAX_MESSAGE = 4096
_DTYPES = {str(d).replace("torch.", ""): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.complex64, torch.complex128,
    torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
    torch.float8_e4m3fn, torch.float8_e5m2)}


class TransportError(Exception):
    """A set that cannot be passed or read (bad seals, an impossible description, a closed socket)."""


# -- one set of tensors in one sealed memfd ---------------------------------------------------------
def pack(obj) -> int:
    """A sealed memfd holding ``obj``; the caller owns (and closes) the descriptor."""
    storages, tensors, index = [], [], {}

    def node(x):
        if isinstance(x, torch.Tensor):
            t = torch.Tensor.detach(x).as_subclass(torch.Tensor)
            if t.layout != torch.strided or t.is_quantized or t.device.type == "meta":
                raise TransportError(f"cannot pass a {t.layout} tensor on {t.device}")
            if t.device.type != "cpu":
                t = t.cpu()
            if t.dtype not in _DTYPES.values():
                raise TransportError(f"cannot pass a tensor of dtype {t.dtype}")
            s = t.untyped_storage()
            key = (s.data_ptr(), s.nbytes()) if s.nbytes() else ("empty", len(storages))
            if key not in index:
                index[key] = len(storages)
                storages.append(s)
            tensors.append({"storage": index[key], "dtype": str(t.dtype).replace("torch.", ""),
                            "shape": list(t.shape), "stride": list(t.stride()), "offset": t.storage_offset()})
            return {"tensor": len(tensors) - 1}
        if isinstance(x, (list, tuple)):
            return {type(x).__name__: [node(v) for v in x]}
        if isinstance(x, dict):
            if not all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in x):
                raise TransportError("dict keys must be strings or integers")
            return {"dict": [[k, node(v)] for k, v in x.items()]}
        if x is None or isinstance(x, (bool, int, float, str)):
            return {"value": x}
        raise TransportError(f"cannot pass a value of type {type(x).__name__}")

    tree = node(obj)
    places, end = [], 0
    for s in storages:
        places.append({"offset": end, "nbytes": s.nbytes()})
        end += -(-s.nbytes() // _ALIGN) * _ALIGN
    meta = json.dumps({"tree": tree, "tensors": tensors, "storages": places}).encode()
    data_start = -(-(_HEADER.size + len(meta)) // _ALIGN) * _ALIGN
    fd = os.memfd_create("kforge-tensors", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, data_start + end)
        _pwrite_all(fd, _HEADER.pack(_MAGIC, len(meta)) + meta, 0)
        for s, place in zip(storages, places):
            if place["nbytes"]:
                raw = torch.empty(0, dtype=torch.uint8).set_(s, 0, (s.nbytes(),))
                _pwrite_all(fd, memoryview(raw.numpy()), data_start + place["offset"])
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def unpack(fd: int):
    """The set in a sealed memfd, as tensors over a private (copy-on-write) mapping of it. Anything
    that is not such a memfd, or whose description does not fit its size, raises TransportError."""
    check_sealed(fd)
    size = os.fstat(fd).st_size
    magic, meta_len = _HEADER.unpack(os.pread(fd, _HEADER.size, 0)) if size >= _HEADER.size else (b"", 0)
    if magic != _MAGIC or meta_len > min(_MAX_META, size - _HEADER.size):
        raise TransportError("not a tensor set (bad header)")
    try:
        meta = json.loads(os.pread(fd, meta_len, _HEADER.size))
        data_start = -(-(_HEADER.size + meta_len) // _ALIGN) * _ALIGN
        mapping = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        bases = [_storage(mapping, data_start, size, p) for p in meta["storages"]]
        tensors = [_tensor(bases, t) for t in meta["tensors"]]
        return _rebuild(meta["tree"], tensors, 0)
    except TransportError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, RuntimeError) as exc:
        raise TransportError(f"not a tensor set ({type(exc).__name__}: {exc})"[:500]) from None


def check_sealed(fd: int) -> None:
    """A regular memfd that nobody can write, shrink, grow or unseal any more."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise TransportError("not a memfd")
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError:
        raise TransportError("not a memfd") from None
    if seals & SEALS != SEALS:
        raise TransportError("the memfd is not sealed against writes")


def _pwrite_all(fd: int, data, offset: int) -> None:
    view = memoryview(data).cast("B")
    while view:
        n = os.pwrite(fd, view[: 1 << 30], offset)
        view, offset = view[n:], offset + n


def _int(v, low: int = 0) -> int:
    if type(v) is not int or v < low:
        raise ValueError(f"{v!r} is not an integer >= {low}")
    return v


def _storage(mapping, data_start: int, size: int, place: dict) -> torch.Tensor:
    offset, nbytes = _int(place["offset"]), _int(place["nbytes"])
    if offset % _ALIGN or data_start + offset + nbytes > size:
        raise TransportError("a storage lies outside the memfd")
    if nbytes == 0:
        return torch.empty(0, dtype=torch.uint8)
    return torch.frombuffer(mapping, dtype=torch.uint8, count=nbytes, offset=data_start + offset)


def _tensor(bases, t: dict) -> torch.Tensor:
    dtype = _DTYPES.get(t["dtype"])
    base = bases[_int(t["storage"])]
    shape, stride, offset = list(t["shape"]), list(t["stride"]), _int(t["offset"])
    if dtype is None or len(shape) != len(stride) or len(shape) > _MAX_DIMS:
        raise TransportError("a tensor's description is invalid")
    shape, stride = [_int(s) for s in shape], [_int(s) for s in stride]
    item = dtype.itemsize
    if base.numel() % item:
        raise TransportError("a storage's size is not a whole number of elements")
    elements = base.numel() // item
    if all(shape) and offset + sum((n - 1) * s for n, s in zip(shape, stride)) >= elements:
        raise TransportError("a tensor reaches past its storage")
    return base.view(dtype).as_strided(shape, stride, offset)


def _rebuild(node, tensors, depth: int):
    if depth > 100 or not isinstance(node, dict) or len(node) != 1:
        raise TransportError("an invalid description")
    (kind, value), = node.items()
    if kind == "tensor":
        return tensors[_int(value)]
    if kind in ("list", "tuple"):
        items = [_rebuild(v, tensors, depth + 1) for v in value]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {k: _rebuild(v, tensors, depth + 1) for k, v in value}
    if kind == "value" and (value is None or isinstance(value, (bool, int, float, str))):
        return value
    raise TransportError("an invalid description")


# -- the reference's end: publishes sets, receives the candidate's --------------------------------
class Exchange:
    """Listens at ``path``; serves published sets by name and keeps what candidates put, until taken.
    One thread per connection (a candidate holds one); the evaluation's commands never wait on it."""

    MAX_RECEIVED = 16  # per connection, sets put and not yet taken: pipelined trials, a block's picks
    MAX_CONNECTIONS = 8

    def __init__(self, path: str):
        self.path = path
        self._lock = threading.Lock()
        self._published: Dict[str, int] = {}
        self._received: Dict[str, int] = {}
        self._connections = 0
        self._peer_ids = itertools.count()  # names a connection for the sets it put
        if os.path.lexists(path):
            os.unlink(path)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        _at_short_path(path, self._listener.bind)
        os.chmod(path, 0o666)  # the sandbox's uid connects; the folder around it is what restricts
        self._listener.listen(self.MAX_CONNECTIONS)
        threading.Thread(target=self._accept, name="kforge-transport", daemon=True).start()

    def publish(self, name: str, obj):
        """Copies ``obj`` into a sealed memfd served as ``name``; returns the set as the candidate will
        see it (a private view of that memfd, not ``obj``)."""
        fd = pack(obj)
        view = unpack(fd)
        with self._lock:
            old = self._published.pop(name, None)
            self._published[name] = fd
        if old is not None:
            os.close(old)
        return view

    def take(self, name: str):
        """What a candidate put under ``name`` (None if nothing; a TransportError if not a set); removed."""
        with self._lock:
            entry = self._received.pop(name, None)
        if entry is None:
            return None
        fd = entry[1]
        try:
            return unpack(fd)
        finally:
            os.close(fd)

    def forget_received(self) -> None:
        with self._lock:
            fds, self._received = [fd for _, fd in self._received.values()], {}
        for fd in fds:
            os.close(fd)

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            fds = list(self._published.values()) + [fd for _, fd in self._received.values()]
            self._published, self._received = {}, {}
        for fd in fds:
            os.close(fd)
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                full = self._connections >= self.MAX_CONNECTIONS
                self._connections += not full
            if full:
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn, next(self._peer_ids)), name="kforge-transport-peer", daemon=True).start()

    def _serve(self, conn: socket.socket, peer: int) -> None:
        try:
            with conn:
                while True:
                    data, fds, _, _ = socket.recv_fds(conn, _MAX_MESSAGE, 1)
                    if not data:
                        for fd in fds:
                            os.close(fd)
                        return
                    reply, fd_out = self._answer(peer, data, fds)
                    socket.send_fds(conn, [json.dumps(reply).encode()], [fd_out] if fd_out is not None else [])
        except OSError:
            pass
        finally:
            with self._lock:
                self._connections -= 1

    def _answer(self, peer: int, data: bytes, fds: list):
        """(reply, descriptor to send with it) for one request; takes ownership of ``fds``."""
        try:
            request = json.loads(data)
            op, name = request["op"], request["name"]
            if not isinstance(name, str) or len(name) > 256:
                raise ValueError("bad name")
        except (ValueError, KeyError, TypeError):
            for fd in fds:
                os.close(fd)
            return {"ok": False, "error": "malformed request"}, None
        if op == "get":
            for fd in fds:
                os.close(fd)
            with self._lock:
                fd = self._published.get(name)
            return ({"ok": True}, fd) if fd is not None else ({"ok": False, "error": f"no set named {name!r}"}, None)
        if op == "put" and len(fds) == 1:
            try:
                check_sealed(fds[0])
            except (TransportError, OSError) as exc:
                os.close(fds[0])
                return {"ok": False, "error": str(exc)}, None
            with self._lock:
                waiting = sum(1 for owner, _ in self._received.values() if owner == peer)
                accepted = name not in self._received and waiting < self.MAX_RECEIVED
                if accepted:
                    self._received[name] = (peer, fds[0])
            if not accepted:
                os.close(fds[0])
                return {"ok": False, "error": f"{name!r} already put, or too many sets waiting"}, None
            return {"ok": True}, None
        for fd in fds:
            os.close(fd)
        return {"ok": False, "error": f"unknown request {op!r}"}, None


# -- the candidate's end ----------------------------------------------------------------------------
class Peer:
    """A connection to an Exchange: fetches published sets, puts sets back."""

    def __init__(self, path: str, timeout_s: float = 300.0):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        self._sock.settimeout(timeout_s)
        _at_short_path(path, self._sock.connect)

    def get(self, name: str):
        reply, fds = self._ask({"op": "get", "name": name}, [])
        if not reply.get("ok") or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            raise TransportError(f"cannot fetch {name}: {reply.get('error', 'no descriptor')}")
        try:
            return unpack(fds[0])
        finally:
            os.close(fds[0])

    def put(self, name: str, obj) -> None:
        fd = pack(obj)
        try:
            reply, fds = self._ask({"op": "put", "name": name}, [fd])
        finally:
            os.close(fd)
        for extra in fds:
            os.close(extra)
        if not reply.get("ok"):
            raise TransportError(f"cannot put {name}: {reply.get('error')}")

    def close(self) -> None:
        self._sock.close()

    def _ask(self, request: dict, fds: list):
        socket.send_fds(self._sock, [json.dumps(request).encode()], fds)
        data, got, _, _ = socket.recv_fds(self._sock, _MAX_MESSAGE, 1)
        if not data:
            raise TransportError("the reference closed the connection")
        try:
            return json.loads(data), got
        except ValueError:
            for fd in got:
                os.close(fd)
            raise TransportError("a malformed reply") from None


def _at_short_path(path: str, use) -> None:
    """Calls ``use`` with ``path``, or where it is longer than a socket address may be (108 bytes),
    with the same file named through /proc/self/fd of its folder."""
    if len(os.fsencode(path)) < 100:
        use(path)
        return
    folder = os.open(os.path.dirname(path) or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        use(f"/proc/self/fd/{folder}/{os.path.basename(path)}")
    finally:
        os.close(folder)


def socket_path(folder: str) -> str:
    return os.path.join(folder, SOCKET_NAME)


def connect(path: Optional[str]) -> Peer:
    if not path:
        raise TransportError("no transport socket was named")
    return Peer(path)
