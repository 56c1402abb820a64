"""Moving tensors between devices, copying and describing them (between processes: transport.py)."""

import torch


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


_DIGEST_ROW = 1024  # 32-bit words per row of the digest's matrix view
_DIGEST_SLICE = 1 << 26  # words summed at a time (a multiple of _DIGEST_ROW)


def digest(obj) -> list:
    """A fingerprint of the tensors' bits, computed where they are: dtype, shape and three wrapping
    sums over each tensor's bytes as 32-bit words seen as rows of _DIGEST_ROW words (plain, weighted
    by row, weighted by column), so a changed or moved value changes it. It tells a drawing repeated
    from its seed from a different one and an input a call changed from one it left alone, reading
    each word twice (row and column sums, accumulated in int64 without an int64 copy of the words).
    A change built to keep all three sums is possible, so it is no proof against a forger."""
    out = []
    with torch._C.DisableTorchFunction():
        for t in leaves(obj):
            out.append([str(t.dtype), list(t.shape), *_word_sums(torch.Tensor.detach(t))])
    return out


def _word_sums(t: torch.Tensor) -> list:
    flat = t.contiguous().reshape(-1).view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
    if flat.storage_offset() % 4:  # a view that starts between words: read as words from a copy
        flat = flat.clone()
    whole = flat.numel() // 4 * 4
    words = flat[:whole].view(torch.int32)
    dev, row = flat.device, _DIGEST_ROW
    sums = torch.zeros(3, dtype=torch.int64, device=dev)
    columns = torch.arange(1, row + 1, dtype=torch.int64, device=dev)
    for start in range(0, words.numel(), _DIGEST_SLICE):
        part = words[start:start + _DIGEST_SLICE]
        rows, first = part.numel() // row, start // row + 1
        body = part[:rows * row].view(rows, row)
        row_sums = body.sum(1, dtype=torch.int64)
        sums[0] += row_sums.sum()
        sums[1] += (row_sums * torch.arange(first, first + rows, dtype=torch.int64, device=dev)).sum()
        sums[2] += (body.sum(0, dtype=torch.int64) * columns).sum()
        rest = part[rows * row:].to(torch.int64)  # the last row, shorter (last slice only)
        if rest.numel():
            rest_sum = rest.sum()
            sums += torch.stack([rest_sum, rest_sum * (first + rows), (rest * columns[:rest.numel()]).sum()])
    if whole < flat.numel():
        sums[0] += flat[whole:].to(torch.int64).sum()
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
