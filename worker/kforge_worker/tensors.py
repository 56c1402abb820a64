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


def kept(obj, shared_storages=frozenset()):
    """Like detach_clone, but a host tensor is copied only where its storage is in ``shared_storages``
    (others may change it); the rest are kept as plain detached tensors, without a copy."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        if t.device.type != "cpu" or t.untyped_storage().data_ptr() in shared_storages:
            return detach_clone(t)
        return torch.Tensor.as_subclass(t, torch.Tensor)
    if isinstance(obj, (list, tuple)):
        return type(obj)(kept(x, shared_storages) for x in obj)
    if isinstance(obj, dict):
        return {k: kept(v, shared_storages) for k, v in obj.items()}
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
