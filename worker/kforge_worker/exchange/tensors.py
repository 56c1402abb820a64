"""Moving tensors between devices, copying and describing them (between processes: transport.py)."""

from typing import Optional

import torch

from kforge_worker.exchange import device_digest


def to_device(obj, device: str):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(x, device) for x in obj)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


def detach_clone(obj):
    """A deep copy of tensors (plain torch.Tensor, contiguous, on the CPU) inside lists/tuples/dicts."""
    if isinstance(obj, torch.Tensor):
        return torch.Tensor.clone(obj.detach()).cpu().as_subclass(torch.Tensor)
    if isinstance(obj, (list, tuple)):
        return type(obj)(detach_clone(x) for x in obj)
    if isinstance(obj, dict):
        return {k: detach_clone(v) for k, v in obj.items()}
    return obj


def copy_to(obj, device: str):
    """A deep copy of tensors (plain torch.Tensor, strides kept) on ``device``, never sharing memory."""
    if isinstance(obj, torch.Tensor):
        return torch.Tensor.as_subclass(obj.detach().to(device, copy=True), torch.Tensor)
    if isinstance(obj, (list, tuple)):
        return type(obj)(copy_to(x, device) for x in obj)
    if isinstance(obj, dict):
        return {k: copy_to(v, device) for k, v in obj.items()}
    return obj


def to_pinned_host(obj):
    """Host copies in page-locked memory, so that bringing them back to the device is a DMA."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        if t.device.type == "cpu":
            return t
        host = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="cpu",
                                   pin_memory=torch.cuda.is_available())
        return host.copy_(t)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_pinned_host(x) for x in obj)
    if isinstance(obj, dict):
        return {k: to_pinned_host(v) for k, v in obj.items()}
    return obj


def kept(obj, shared_storages=frozenset(), on_device: bool = False):
    """Like detach_clone, but a tensor is copied only where its storage is in ``shared_storages``
    (others may change it) or where it lies on a device and ``on_device`` is False (then a host copy);
    the rest are kept as plain detached tensors, without a copy."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        if t.untyped_storage().data_ptr() in shared_storages:
            return copy_to(t, t.device) if on_device else detach_clone(t)
        if t.device.type != "cpu" and not on_device:
            return detach_clone(t)
        return torch.Tensor.as_subclass(t, torch.Tensor)
    if isinstance(obj, (list, tuple)):
        return type(obj)(kept(x, shared_storages, on_device) for x in obj)
    if isinstance(obj, dict):
        return {k: kept(v, shared_storages, on_device) for k, v in obj.items()}
    return obj


def storages(obj) -> set:
    """The data pointers of the storages of the tensors inside lists/tuples/dicts."""
    if isinstance(obj, torch.Tensor):
        return {obj.untyped_storage().data_ptr()}
    if isinstance(obj, (list, tuple)):
        return set().union(*(storages(x) for x in obj))
    if isinstance(obj, dict):
        return set().union(*(storages(v) for v in obj.values()))
    return set()


def describe(obj):
    """A JSON-friendly summary: shapes and dtypes of tensors, values of small scalars."""
    if isinstance(obj, torch.Tensor):
        return {"shape": list(obj.shape), "dtype": str(obj.dtype).replace("torch.", "")}
    if isinstance(obj, (list, tuple)):
        return [describe(x) for x in obj]
    if isinstance(obj, dict):
        return {k: describe(v) for k, v in obj.items()}
    if isinstance(obj, (int, float, bool)) or obj is None:
        return obj
    return type(obj).__name__


def nbytes(obj) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(x) for x in obj)
    if isinstance(obj, dict):
        return sum(nbytes(v) for v in obj.values())
    return 0


_DIGEST_ROW = 4096  # bytes per row of the digest's matrix view (a multiple of 8, as torch._int_mm needs)
_DIGEST_SLICE_ROWS = 1 << 16  # rows multiplied at a time (256 MiB at most)
_MIN_ROWS = 17  # the fewest rows torch._int_mm multiplies on CUDA; fewer are padded with zero rows
_WEIGHT_COLUMNS = 8  # int8 weights per byte position
_WEIGHTS: dict = {}  # (row, device) -> the (row, _WEIGHT_COLUMNS) int8 weight matrix


def digest(obj, storage_sums: Optional[dict] = None) -> list:
    """A fingerprint of the tensors' bits, computed where they are: dtype, shape and ten wrapping sums
    over each tensor's bytes seen as the rows of an int8 matrix X (_DIGEST_ROW bytes a row). X times a
    fixed int8 weight matrix W gives each row's weighted byte sums, exactly in int32 (one read of the
    bytes: an integer matrix product, torch._int_mm, or on an NVIDIA GPU device_digest's kernel, which
    gives the same sums at the memory's speed); the digest is their column sums and two of them
    weighted by row. W's first column is all ones and its next two give every byte position of a row
    a pair of its own, so a changed byte, a value moved along a row and one moved down a column each
    change it. It tells a drawing repeated from its seed from a different one and an input a call
    changed from one it left alone. A change built to keep all ten sums is possible, so it is no proof
    against a forger. The value depends only on the bytes, not on the device that computed it.

    ``storage_sums``: sums already taken of whole storages (copy_with_sums, keyed by the storage's
    address and size), used for a tensor whose bytes are exactly its storage's."""
    out = []
    with torch._C.DisableTorchFunction():
        for t in leaves(obj):
            t = torch.Tensor.detach(t)
            known = (storage_sums or {}).get(_whole_storage(t))
            out.append([str(t.dtype), list(t.shape), *(known if known is not None else _byte_row_sums(t))])
    return out


def _whole_storage(t: torch.Tensor):
    """(address, bytes) of ``t``'s storage where ``t`` covers exactly its bytes, in order; else None."""
    s = t.untyped_storage()
    if t.storage_offset() or not t.is_contiguous() or t.numel() * t.element_size() != s.nbytes():
        return None
    return s.data_ptr(), s.nbytes()


def copy_with_sums(raw: torch.Tensor, dst: torch.Tensor) -> Optional[list]:
    """Copies ``raw`` (a storage's bytes as contiguous uint8 on a CUDA device) into ``dst`` and returns
    digest's sums of those bytes, taken in the same read (device_digest); None, with nothing copied,
    where the digest kernel cannot run here. The sums, keyed as digest's ``storage_sums``, save a
    digest of the storage's tensors its own read of the bytes."""
    if _DIGEST_ROW != device_digest.ROW:
        return None
    return device_digest.sums(raw.view(torch.int8), _weights(_DIGEST_ROW, raw.device), copy_to=dst)


def ready_digest(device: torch.device) -> None:
    """A first digest on ``device``: its weights and the kernel (or the operator path's setup) are
    ready before a trial needs them."""
    digest(torch.zeros(_DIGEST_ROW * _MIN_ROWS + 1, dtype=torch.uint8, device=device))


def _weights(row: int, device: torch.device) -> torch.Tensor:
    key = (row, str(device))
    if key not in _WEIGHTS:
        k = torch.arange(row, dtype=torch.int64)
        columns = [torch.ones_like(k), k % 128 - 64, k // 128 % 128 - 64]  # (k % 128, k // 128): a pair per position
        for j in range(_WEIGHT_COLUMNS - len(columns)):  # fixed pseudo-random weights in [-127, 127]
            columns.append((k * 40503 + 7919 * (j + 1)) * 2654435761 // 65536 % 255 - 127)
        # Column-major: with row-major weights cuBLASLt transposes the bytes first (0.5 TB/s on an H100,
        # against 1.6 TB/s, bench/results/20261125-h100-one-read-digest).
        _WEIGHTS[key] = torch.stack(columns, 1).to(torch.int8).to(device).t().contiguous().t()
    return _WEIGHTS[key]


def _row_products(body: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """body @ weights in int32: exact, since |sum| <= row * 128 * 127 < 2**31. torch._int_mm where the
    build has it for the device, else in float64, exact too (below 2**53)."""
    try:
        return torch._int_mm(body, weights)
    except (RuntimeError, AttributeError):
        return (body.to(torch.float64) @ weights.to(torch.float64)).to(torch.int32)


def value_bytes(t: torch.Tensor) -> torch.Tensor:
    """``t``'s values as flat uint8, in order: a lazy conjugate or negation resolved (such a view cannot
    be viewed as bytes), a copy where ``t`` is not contiguous, else a view."""
    return t.resolve_conj().resolve_neg().contiguous().reshape(-1).view(torch.uint8)


def _byte_row_sums(t: torch.Tensor) -> list:
    flat = value_bytes(t).view(torch.int8) if t.numel() else torch.empty(0, dtype=torch.int8)
    if flat.data_ptr() % 16:  # a view that starts between the aligned addresses the product reads from
        flat = flat.clone()
    row, dev = _DIGEST_ROW, flat.device
    weights = _weights(row, dev)
    if flat.is_cuda and row == device_digest.ROW:
        in_one_read = device_digest.sums(flat, weights)
        if in_one_read is not None:
            return in_one_read
    sums = torch.zeros(_WEIGHT_COLUMNS + 2, dtype=torch.int64, device=dev)
    slice_rows = max(_DIGEST_SLICE_ROWS, _MIN_ROWS)
    ordinals = torch.arange(1, slice_rows + 1, dtype=torch.int64, device=dev)

    def add(body: torch.Tensor, first_row: int) -> None:
        products = _row_products(body, weights)
        column_sums = products.sum(0, dtype=torch.int64)
        # Row-weighted: sum over i of (first_row + i + 1) * products[i], for the first two columns.
        weighted = (products[:, :2].to(torch.int64) * ordinals[:products.shape[0], None]).sum(0)
        sums[:_WEIGHT_COLUMNS] += column_sums
        sums[_WEIGHT_COLUMNS:] += weighted + first_row * column_sums[:2]

    whole, done = flat.numel() // row, 0
    while whole - done >= _MIN_ROWS:
        rows = min(slice_rows, whole - done)
        add(flat[done * row:(done + rows) * row].view(rows, row), done)
        done += rows
    rest = flat[done * row:]
    if rest.numel():  # fewer than _MIN_ROWS rows and a short one: zero bytes add nothing to any sum
        block = torch.zeros(_MIN_ROWS * row, dtype=torch.int8, device=dev)
        block[:rest.numel()] = rest
        add(block.view(_MIN_ROWS, row), done)
    return [int(v) for v in sums.tolist()]


def leaves(obj) -> list:
    """The tensors inside lists/tuples/dicts, in order."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in leaves(x)]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in leaves(v)]
    return []
