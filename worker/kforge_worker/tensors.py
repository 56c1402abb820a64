"""Moving inputs and outputs between processes, and describing them.

Files are written with torch.save and read back with ``weights_only=True``: a candidate writes the
outputs file, and the trusted reference process must never unpickle arbitrary objects from it.
"""

import os
import stat

import torch

try:
    # These files only travel between two local processes, and a checksum protects nothing against a
    # candidate (it writes its own): skipping zip's CRC-32 over every byte makes saving 30-40% faster.
    from torch.utils.serialization import config as _serialization_config

    _serialization_config.save.compute_crc32 = False
except (ImportError, AttributeError):  # torch before 2.6 always computes it
    pass


def save(obj, path: str) -> None:
    torch.save(obj, path)


def load(path: str, device: str = "cpu"):
    return torch.load(path, map_location=device, weights_only=True)


def load_untrusted(path: str, device: str = "cpu"):
    """Reads a file the candidate wrote: only a regular file, never through a link (it could point at
    a host file) and never blocking on a FIFO or a device (a reference stuck in open() would fail the
    whole problem). Raises OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{os.path.basename(path)} is not a regular file")
        return torch.load(f, map_location=device, weights_only=True)


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
