"""Host tensors between the reference and the candidate process: sealed memfds over a Unix socket.

A set of tensors (lists, tuples and dicts of tensors and plain values) travels as one memfd: a
header, the set's description as JSON (dtype, shape, strides and storage offset of each tensor) and
the bytes of each storage. The writer copies into a fresh memfd (never a mapping of its own memory)
and seals it (no write, shrink or grow, no seal removed), so the reader can map it without copying:
nobody, the writer included, can change what the reader sees. A reader maps a set privately
(copy on write): tensors are writable, but writes stay in the reader's process. Every page of the
mapping is mapped in when the set is read (populated), not on first touch: a timed call that reads a
set it has just received pays no page faults the call after it would not pay.

With a device backend (device_transport.py, off by default) a storage on the device does not go
through the memfd: its bytes are copied into a device buffer of their own, whose descriptor travels
next to the memfd, and the description names the buffer instead of an offset. A reader always
imports such a buffer as a private copy, so what the writer does with its buffer afterwards changes
nothing the reader sees; the reference copies what a candidate puts the moment it arrives. The one
exception goes the other way: the candidate may map a trial's inputs in place where the reference
serves them once and never reads them again (candidate.py).

The reference publishes sets under names; the candidate fetches them and puts its outputs back under
names kforge gives it, over a SOCK_SEQPACKET socket the reference listens on in the evaluation's
shared folder (read-only in the candidate's sandbox; a socket can still be connected to there).
docs/isolation.md says why the socket lives there.
"""

import errno
import fcntl
import itertools
import json
import mmap
import os
import socket
import stat
import struct
import threading
import time
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
_MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)  # Linux 5.14 (the value in <linux/mman.h>)
_MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)
MAX_BUFFERS = 64  # device buffers per set (SCM_RIGHTS passes at most 253 descriptors); more go by memfd
_DTYPES = {str(d).replace("torch.", ""): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.complex64, torch.complex128,
    torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
    torch.float8_e4m3fn, torch.float8_e5m2)}


class TransportError(Exception):
    """A set that cannot be passed or read (bad seals, an impossible description, a closed socket)."""


# -- one set of tensors in one sealed memfd (and its device buffers) --------------------------------
def pack(obj) -> int:
    """A sealed memfd holding ``obj``; the caller owns (and closes) the descriptor."""
    fd, buffers = pack_set(obj, None)
    return fd


def _seal(fd: int, attempts: int = 6) -> None:
    """Seals a memfd nobody has mapped. The kernel refuses F_SEAL_WRITE (EBUSY) while any page of the
    file holds a reference beyond the page cache's own, and a page written a moment ago can still be
    held briefly by the kernel itself (seen on a loaded machine): try again after a short wait."""
    for attempt in range(attempts):
        try:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or attempt + 1 == attempts:
                raise
            time.sleep(0.01 * 2 ** attempt)


def pack_set(obj, backend, reuse: bool = False, sums: Optional[dict] = None):
    """(sealed memfd, device buffers) holding ``obj``: with ``backend``, each storage it handles goes
    into a fresh buffer of its own (up to MAX_BUFFERS), or with ``reuse`` into one the backend kept from
    a set served once (StagedExports.recycle); ``sums`` gets the digest sums the backend took of them
    while copying. The caller owns both: it sends the memfd and each buffer's ``fd``, and closes (or
    recycles) them all when the set is no longer served."""
    storages, tensors, index = [], [], {}
    buffers = []  # (storage index, buffer) of device storages, in buffer order

    def node(x):
        if isinstance(x, torch.Tensor):
            t = torch.Tensor.detach(x).as_subclass(torch.Tensor)
            if t.layout != torch.strided or t.is_quantized or t.device.type == "meta":
                raise TransportError(f"cannot pass a {t.layout} tensor on {t.device}")
            on_device = backend is not None and backend.handles(t) and len(buffers) < MAX_BUFFERS
            # A device tensor that goes by memfd is copied into it from the device (_write_storage).
            if t.dtype not in _DTYPES.values():
                raise TransportError(f"cannot pass a tensor of dtype {t.dtype}")
            s = t.untyped_storage()
            key = (str(t.device), s.data_ptr(), s.nbytes()) if s.nbytes() else ("empty", len(storages))
            if key not in index:
                index[key] = len(storages)
                storages.append(s)
                if on_device:
                    buffers.append((index[key], None))
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
    # node refers to itself through its closure: a cycle that, left alone, keeps every storage of the
    # set (a trial's outputs) alive until the cyclic collector runs.
    del node
    on_buffer = {i: n for n, (i, _) in enumerate(buffers)}
    places, end = [], 0
    for i, s in enumerate(storages):
        if i in on_buffer:
            places.append({"buffer": on_buffer[i], "nbytes": s.nbytes()})
            continue
        places.append({"offset": end, "nbytes": s.nbytes()})
        end += -(-s.nbytes() // _ALIGN) * _ALIGN
    meta = json.dumps({"tree": tree, "tensors": tensors, "storages": places}).encode()
    data_start = -(-(_HEADER.size + len(meta)) // _ALIGN) * _ALIGN
    exported = []
    fd = os.memfd_create("kforge-tensors", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        for i, _ in buffers:
            raw = raw_bytes(storages[i])
            exported.append(backend.export(raw, reuse=reuse, sums=sums))
        os.ftruncate(fd, data_start + end)
        _pwrite_all(fd, _HEADER.pack(_MAGIC, len(meta)) + meta, 0)
        for i, (s, place) in enumerate(zip(storages, places)):
            if i not in on_buffer and place["nbytes"]:
                _write_storage(fd, raw_bytes(s), data_start + place["offset"])
        _seal(fd)
    except BaseException:
        os.close(fd)
        _close_buffers(exported)
        raise
    return fd, exported


def raw_bytes(s) -> torch.Tensor:
    """A storage as a uint8 tensor on its own device (no copy)."""
    return torch.empty(0, dtype=torch.uint8, device=s.device).set_(s, 0, (s.nbytes(),))


def unpack(fd: int):
    """The set in a sealed memfd, as tensors over a private (copy-on-write) mapping of it. Anything
    that is not such a memfd, or whose description does not fit its size, raises TransportError."""
    return unpack_set(fd, [], None)


def unpack_set(fd: int, buffer_fds, backend, in_place: bool = False, populated: bool = True):
    """Like unpack, for a set that may name device buffers: ``buffer_fds`` in the order the
    description numbers them, each imported through ``backend`` as a private copy, or with
    ``in_place`` mapped where it is. A description that names other buffers than those sent, or more
    bytes than a buffer holds, raises TransportError. Only the bytes the described tensors reach are
    mapped: a memfd (or a storage) larger than its tensors, sparse or not, costs the reader nothing
    beyond them. ``populated``: those pages are read in now (a candidate about to time a call on
    them), else on first touch (the reference, which checks a set's shapes before it reads it)."""
    check_sealed(fd)
    size = os.fstat(fd).st_size
    magic, meta_len = _HEADER.unpack(os.pread(fd, _HEADER.size, 0)) if size >= _HEADER.size else (b"", 0)
    if magic != _MAGIC or meta_len > min(_MAX_META, size - _HEADER.size):
        raise TransportError("not a tensor set (bad header)")
    try:
        meta = json.loads(os.pread(fd, meta_len, _HEADER.size))
        data_start = -(-(_HEADER.size + meta_len) // _ALIGN) * _ALIGN
        places = meta["storages"]
        named = [_int(p["buffer"]) for p in places if isinstance(p, dict) and "buffer" in p]
        if named != list(range(len(buffer_fds))):
            raise TransportError(f"the set names device buffers {named[:8]}, but {len(buffer_fds)} were sent")
        if named and backend is None:
            raise TransportError("the set holds device buffers, and this exchange passes host memory only")
        needed = _bytes_reached(meta["tensors"], len(places))
        extent = 0
        for i, p in enumerate(places):
            if "buffer" not in p:
                offset, nbytes = _int(p["offset"]), _int(p["nbytes"])
                if offset % _ALIGN or data_start + offset + nbytes > size:
                    raise TransportError("a storage lies outside the memfd")
                if needed[i]:
                    extent = max(extent, data_start + offset + min(nbytes, needed[i]))
        mapping = None
        if extent:
            mapping = mmap.mmap(fd, extent, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
            if populated:
                populate(mapping)
        bases = [_device_storage(backend, buffer_fds, p, in_place) if "buffer" in p
                 else _storage(mapping, data_start, size, p, needed[i]) for i, p in enumerate(places)]
        tensors = [_tensor(bases, t) for t in meta["tensors"]]
        return _rebuild(meta["tree"], tensors, 0)
    except TransportError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, RuntimeError, OSError) as exc:
        raise TransportError(f"not a tensor set ({type(exc).__name__}: {exc})"[:500]) from None


def populate(mapping: mmap.mmap) -> None:
    """Maps every page of a fresh mapping of a set now. A first read of a page costs a fault (4 MiB read
    for the first time took 0.30 ms, the same read again 0.05 ms), which would land in whichever timed
    call touches the page first. The pages are read in, not copied: MAP_POPULATE would break copy on
    write and copy every page of a writable private mapping. Kernels before 5.14 lack the madvise;
    there one byte of each page is read instead."""
    try:
        mapping.madvise(_MADV_POPULATE_READ)
    except OSError:
        torch.frombuffer(mapping, dtype=torch.uint8)[::mmap.PAGESIZE].sum()


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


def _write_storage(fd: int, raw: torch.Tensor, offset: int) -> None:
    """A storage's bytes into the memfd at ``offset``. A device storage is copied straight into a
    shared mapping of the memfd, its pages allocated up front: one copy, where ``.cpu()`` and a write
    made two and held a host copy of the storage meanwhile. The mapping is gone before the memfd is
    sealed (the kernel refuses a write seal while one exists)."""
    if raw.device.type == "cpu":
        _pwrite_all(fd, memoryview(raw.numpy()), offset)
        return
    start = offset // mmap.PAGESIZE * mmap.PAGESIZE
    mapping = mmap.mmap(fd, offset - start + raw.numel(), offset=start)
    try:
        try:
            mapping.madvise(_MADV_POPULATE_WRITE)
        except OSError:
            pass  # before Linux 5.14: the copy faults each page in
        view = torch.frombuffer(mapping, dtype=torch.uint8, count=raw.numel(), offset=offset - start)
        view.copy_(raw)
        del view
    finally:
        mapping.close()


def _pwrite_all(fd: int, data, offset: int) -> None:
    view = memoryview(data).cast("B")
    while view:
        n = os.pwrite(fd, view[: 1 << 30], offset)
        view, offset = view[n:], offset + n


def _int(v, low: int = 0) -> int:
    if type(v) is not int or v < low:
        raise ValueError(f"{v!r} is not an integer >= {low}")
    return v


def _bytes_reached(tensors, storages: int) -> list:
    """For each storage, how many of its first bytes the tensors described over it reach (0 where none
    does): all a reader needs to map. A description that does not parse is left to _tensor to refuse."""
    reached = [0] * storages
    for t in tensors:
        try:
            dtype = _DTYPES[t["dtype"]]
            i, offset = _int(t["storage"]), _int(t["offset"])
            shape, stride = [_int(n) for n in t["shape"]], [_int(s) for s in t["stride"]]
        except (KeyError, TypeError, ValueError):
            continue
        if i >= storages or len(shape) != len(stride) or not all(shape):
            continue
        end = (offset + sum((n - 1) * s for n, s in zip(shape, stride)) + 1) * dtype.itemsize
        reached[i] = max(reached[i], end)
    return reached


def _storage(mapping, data_start: int, size: int, place: dict, reached: int) -> torch.Tensor:
    """A storage's first ``reached`` bytes (those its tensors use; its place was checked before mapping),
    rounded up to a 64-byte multiple so every dtype still divides it."""
    offset, nbytes = _int(place["offset"]), _int(place["nbytes"])
    count = min(nbytes, -(-reached // _ALIGN) * _ALIGN)
    if count == 0:
        return torch.empty(0, dtype=torch.uint8)
    count = min(count, len(mapping) - data_start - offset)
    return torch.frombuffer(mapping, dtype=torch.uint8, count=count, offset=data_start + offset)


def _device_storage(backend, buffer_fds, place: dict, in_place: bool) -> torch.Tensor:
    """One device buffer's first ``nbytes``: a private copy, or with ``in_place`` the buffer mapped
    (the backend refuses foreign descriptors and buffers smaller than that)."""
    fd, nbytes = buffer_fds[_int(place["buffer"])], _int(place["nbytes"])
    return backend.import_view(fd, nbytes) if in_place else backend.import_copy(fd, nbytes)


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
class _Published:
    """A set being served: its memfd and its device buffers (never read again by the publisher)."""

    def __init__(self, fd: int, buffers: list):
        self.fd, self.buffers = fd, buffers

    def fds(self) -> list:
        return [self.fd] + [b.fd for b in self.buffers]

    def close(self) -> None:
        os.close(self.fd)
        _close_buffers(self.buffers)


class Exchange:
    """Listens at ``path``; serves published sets by name and keeps what candidates put, until taken.
    One thread per connection (a candidate holds one); the evaluation's commands never wait on it.
    With a device ``backend`` (device_transport.py) device tensors travel as device buffers, and a set
    a candidate puts is read (its buffers copied) when it arrives, before the candidate hears back."""

    MAX_RECEIVED = 16  # per connection, sets put and not yet taken: pipelined trials, a block's picks
    MAX_CONNECTIONS = 8  # per candidate (a sandbox: one PID namespace)
    MAX_CANDIDATES = 8  # candidates connected at once (a head-to-head has two)

    def __init__(self, path: str, backend=None):
        self.path = path
        self.backend = backend
        self._lock = threading.Lock()
        self._published: Dict[str, _Published] = {}
        self._received: Dict[str, tuple] = {}  # name -> (peer, the set, or the TransportError reading it)
        self._connections: Dict[str, int] = {}  # candidate (its PID namespace) -> open connections
        self._peer_ids = itertools.count()  # names a connection for the sets it put
        if os.path.lexists(path):
            os.unlink(path)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        _at_short_path(path, self._listener.bind)
        os.chmod(path, 0o666)  # the sandbox's uid connects; the folder around it is what restricts
        self._listener.listen(self.MAX_CONNECTIONS)
        threading.Thread(target=self._accept, name="kforge-transport", daemon=True).start()

    @property
    def mode(self) -> str:
        return self.backend.name if self.backend is not None else "host"

    def publish(self, name: str, obj, device: bool = False, reuse: bool = False, sums: Optional[dict] = None):
        """Copies ``obj`` into a sealed memfd (with ``device``, its device tensors into device buffers;
        with ``reuse`` as well, buffers recycled from a set served once where their sizes match;
        with ``sums``, the digest sums of the storages copied into buffers, where the backend takes
        them while copying) served as ``name``. Returns the set as the candidate will see it (a private
        view of that memfd, not ``obj``) where it is all on the host; None where it holds device
        buffers, which the publisher never reads (the candidate could write them)."""
        fd, buffers = pack_set(obj, self.backend if device else None, reuse=reuse, sums=sums)
        view = None if buffers else unpack(fd)
        with self._lock:
            old = self._published.pop(name, None)
            self._published[name] = _Published(fd, buffers)
        if old is not None:
            old.close()
        return view

    def unpublish(self, name: str, recycle: bool = False) -> None:
        """Stops serving ``name`` and releases its memfd and buffers; with ``recycle`` the backend keeps
        the buffers for the next set published with ``reuse`` (a set the candidate was served once)."""
        with self._lock:
            old = self._published.pop(name, None)
        if old is None:
            return
        if recycle and self.backend is not None and old.buffers:
            old.buffers, kept = [], old.buffers
            self.backend.recycle(kept)
        old.close()

    def drop_spares(self) -> None:
        """Releases the buffers kept for reuse (before sets that must not reuse them take the memory)."""
        if self.backend is not None:
            self.backend.drop_spares()

    def take(self, name: str):
        """What a candidate put under ``name`` (None if nothing; a TransportError if not a set); removed."""
        with self._lock:
            entry = self._received.pop(name, None)
        if entry is None:
            return None
        if isinstance(entry[1], TransportError):
            raise entry[1]
        return entry[1]

    def forget_received(self) -> None:
        with self._lock:
            self._received = {}

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            published = list(self._published.values())
            self._published, self._received = {}, {}
        for p in published:
            p.close()
        self.drop_spares()
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
            owner = _peer_sandbox(conn)
            with self._lock:
                open_here = self._connections.get(owner, 0)
                full = open_here >= self.MAX_CONNECTIONS or (
                    not open_here and len(self._connections) >= self.MAX_CANDIDATES)
                if not full:
                    self._connections[owner] = open_here + 1
            if full:
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn, next(self._peer_ids), owner), name="kforge-transport-peer",
                             daemon=True).start()

    def _serve(self, conn: socket.socket, peer: int, owner: str) -> None:
        try:
            with conn:
                while True:
                    data, fds, _, _ = socket.recv_fds(conn, _MAX_MESSAGE, 1 + MAX_BUFFERS)
                    if not data:
                        for fd in fds:
                            os.close(fd)
                        return
                    reply, fds_out = self._answer(peer, data, fds)
                    try:
                        socket.send_fds(conn, [json.dumps(reply).encode()], fds_out)
                    finally:
                        _close_all(fds_out)
        except OSError:
            pass
        finally:
            with self._lock:
                self._connections[owner] -= 1
                if not self._connections[owner]:
                    del self._connections[owner]

    def _answer(self, peer: int, data: bytes, fds: list):
        """(reply, descriptors to send with it, which the caller closes once sent) for one request;
        closes ``fds`` before it returns."""
        try:
            request = json.loads(data)
            op, name = request["op"], request["name"]
            if not isinstance(name, str) or len(name) > 256:
                raise ValueError("bad name")
        except (ValueError, KeyError, TypeError):
            _close_all(fds)
            return {"ok": False, "error": "malformed request"}, []
        if op == "hello":
            _close_all(fds)
            return {"ok": True, "device_transport": self.mode}, []
        if op == "get":
            _close_all(fds)
            with self._lock:
                published = self._published.get(name)
                if published is not None:  # copies of the descriptors: unpublish may close the originals
                    return {"ok": True}, [os.dup(fd) for fd in published.fds()]
            return {"ok": False, "error": f"no set named {name!r}"}, []
        if op == "put" and fds:
            try:
                check_sealed(fds[0])
            except (TransportError, OSError) as exc:
                _close_all(fds)
                return {"ok": False, "error": str(exc)}, []
            with self._lock:
                waiting = sum(1 for owner, _ in self._received.values() if owner == peer)
                accepted = name not in self._received and waiting < self.MAX_RECEIVED
                if accepted:
                    self._received[name] = (peer, TransportError("the set is still being read"))
            if not accepted:
                _close_all(fds)
                return {"ok": False, "error": f"{name!r} already put, or too many sets waiting"}, []
            # Read now, while the candidate waits for this reply: its buffers are copied before it
            # can touch them again, as a sealed memfd would be frozen.
            try:
                got = unpack_set(fds[0], fds[1:], self.backend, populated=False)
            except TransportError as exc:
                got = exc
            finally:
                _close_all(fds)
            with self._lock:
                self._received[name] = (peer, got)
            return {"ok": True}, []
        _close_all(fds)
        return {"ok": False, "error": f"unknown request {op!r}"}, []


def _peer_sandbox(conn: socket.socket) -> str:
    """Which candidate a connection comes from: the PID namespace of the connecting process (each
    sandboxed candidate has its own; SO_PEERCRED names the process as the reference sees it). The
    connection limit is per candidate, so one (the current best of `kforge run`) cannot take the
    connections another (the challenger) needs. Without a sandbox, or where the namespace cannot be
    read, every such connection counts as one unknown candidate's."""
    try:
        pid, _, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        fd = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return "unknown"
    # A namespace the candidate made inside its sandbox counts as its sandbox's: walk up to the one
    # whose parent is the reference's own.
    own = os.stat("/proc/self/ns/pid")
    try:
        for _ in range(32):
            try:
                parent = fcntl.ioctl(fd, _NS_GET_PARENT)
            except OSError:
                break  # no parent visible from here: the top one is reached
            if _same_file(os.fstat(parent), own):
                os.close(parent)
                break
            os.close(fd)
            fd = parent
        st = os.fstat(fd)
        return f"pid:[{st.st_ino}]" if not _same_file(st, own) else "unknown"
    finally:
        os.close(fd)


_NS_GET_PARENT = 0xB702  # _IO(0xb7, 0x2), <linux/nsfs.h>


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _close_buffers(buffers) -> None:
    for b in buffers:
        b.close()


def _close_all(fds) -> None:
    for fd in fds:
        os.close(fd)


# -- the candidate's end ----------------------------------------------------------------------------
class Peer:
    """A connection to an Exchange: fetches published sets, puts sets back. The exchange says whether
    device tensors travel as device buffers; ``backend_for`` makes the backend for that mode."""

    def __init__(self, path: str, timeout_s: float = 300.0, backend_for=None):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        self._sock.settimeout(timeout_s)
        _at_short_path(path, self._sock.connect)
        reply, fds = self._ask({"op": "hello", "name": ""}, [])
        _close_all(fds)
        self.device_transport = reply.get("device_transport", "host") if reply.get("ok") else "host"
        self.backend = backend_for(self.device_transport) if backend_for and self.device_transport != "host" else None

    def get(self, name: str, in_place: bool = False):
        """The set published as ``name``; with ``in_place`` its device buffers are used where they
        are instead of copied (for a set nobody else reads again)."""
        reply, fds = self._ask({"op": "get", "name": name}, [])
        try:
            if not reply.get("ok") or not fds:
                raise TransportError(f"cannot fetch {name}: {reply.get('error', 'no descriptor')}")
            return unpack_set(fds[0], fds[1:], self.backend, in_place)
        finally:
            _close_all(fds)

    def put(self, name: str, obj, recycle: bool = False) -> None:
        """Hands ``obj`` to the reference; with ``recycle`` its device buffers are kept for the next
        put of the same sizes (a correctness trial's outputs, put once a trial) instead of released."""
        fd, buffers = pack_set(obj, self.backend, reuse=recycle)
        try:
            reply, fds = self._ask({"op": "put", "name": name}, [fd] + [b.fd for b in buffers])
        except BaseException:
            _close_buffers(buffers)
            raise
        finally:
            os.close(fd)
        # The reference has its copy once it replied.
        if recycle and self.backend is not None:
            self.backend.recycle(buffers)
        else:
            _close_buffers(buffers)
        _close_all(fds)
        if not reply.get("ok"):
            raise TransportError(f"cannot put {name}: {reply.get('error')}")

    def close(self) -> None:
        self._sock.close()

    def _ask(self, request: dict, fds: list):
        socket.send_fds(self._sock, [json.dumps(request).encode()], fds)
        data, got, _, _ = socket.recv_fds(self._sock, _MAX_MESSAGE, 1 + MAX_BUFFERS)
        if not data:
            _close_all(got)
            raise TransportError("the reference closed the connection")
        try:
            return json.loads(data), got
        except ValueError:
            _close_all(got)
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


def connect(path: Optional[str], backend_for=None) -> Peer:
    if not path:
        raise TransportError("no transport socket was named")
    return Peer(path, backend_for=backend_for)
