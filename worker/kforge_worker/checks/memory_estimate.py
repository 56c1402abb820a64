"""How much memory one call of a problem's model holds, found before anything is allocated, and how
much the device has free.

The model and its inputs are built on PyTorch's ``meta`` device (shapes and dtypes, no storage) and
the forward runs there, while a dispatch mode follows every tensor an operator creates and frees: its
peak is the most memory the call holds at once (the outputs included). Nothing touches the real
device, so kforge can ask before it lets the evaluation start (docs/bench.md#memory). A problem the
meta device cannot run (an operator without a meta kernel, a size read from a tensor's values) gets
``method: "unknown"`` and kforge runs its evaluation alone.
"""

import json
import os
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kforge_worker.common import problem


class _PeakBytes(TorchDispatchMode):
    """Bytes held by the tensors operators create, at their peak. A tensor counts until the last
    reference to it goes, as the caching allocator frees it; views and in-place results share their
    input's storage and add nothing."""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0

    def _release(self, nbytes: int) -> None:
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if any(r.alias_info is not None for r in func._schema.returns):
            return out
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                n = t.untyped_storage().nbytes()
                self.live += n
                self.peak = max(self.peak, self.live)
                weakref.finalize(t, self._release, n)
        return out


def _tensor_bytes(obj) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.untyped_storage().nbytes()
    if isinstance(obj, (list, tuple)):
        return sum(_tensor_bytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(_tensor_bytes(o) for o in obj.values())
    return 0


def trace(module) -> dict:
    """The memory of one forward of ``module``'s Model on its inputs, traced on the meta device."""
    with torch.device("meta"):
        model = module.Model(*module.get_init_inputs()).eval()
        inputs = list(module.get_inputs())
    state = list(model.parameters()) + list(model.buffers())
    mode = _PeakBytes()
    with torch.no_grad(), mode:
        outputs = model(*inputs)
    return {"parameter_bytes": sum(t.untyped_storage().nbytes() for t in state),
            "input_bytes": _tensor_bytes(inputs),
            "output_bytes": _tensor_bytes(outputs),
            "forward_peak_bytes": mode.peak}


_TRACED: dict = {}  # (problem file, its size and mtime, overrides) -> trace's figures or the exception


def traced(path: str, overrides: dict) -> dict:
    """trace() of the problem at ``path`` loaded with ``overrides``, traced once per process (the
    reference answers ``estimate_memory`` and then ``load_problem`` for the same problem). The trace
    runs on a module of its own: a problem that keeps what get_inputs() made in a global would
    otherwise keep meta tensors for the trials. Raises what trace raised."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns, json.dumps(overrides, sort_keys=True, default=str))
    if key not in _TRACED:
        try:
            _TRACED[key] = trace(problem.load_problem(path, overrides, "kforge_problem_trace"))
        except Exception as exc:
            _TRACED[key] = exc
    if len(_TRACED) > 64:  # a long-lived worker: keep the latest problems only
        _TRACED.pop(next(iter(_TRACED)))
    found = _TRACED[key]
    if isinstance(found, Exception):
        raise found
    return dict(found)


def _host_memory() -> dict:
    """MemAvailable and MemTotal, bounded by this process's memory cgroup when it has a limit."""
    info = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, value = line.split(":", 1)
            info[key] = int(value.split()[0]) * 1024
    free, total = info.get("MemAvailable", info.get("MemFree", 0)), info.get("MemTotal", 0)
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read())
        if limit != "max":
            free, total = min(free, max(0, int(limit) - used)), min(total, int(limit))
    except (OSError, ValueError):
        pass
    return {"free_bytes": free, "total_bytes": total}


def device_memory(device: str) -> dict:
    """Free and total bytes of ``device`` now ("cpu": the host's available memory)."""
    if device.startswith("cuda"):
        free, total = torch.cuda.mem_get_info(torch.device(device))
        return {"free_bytes": int(free), "total_bytes": int(total)}
    return _host_memory()


def estimate(req: dict) -> dict:
    """``estimate_memory``: the traced figures of the problem (or why there are none) and the device's memory."""
    overrides = {k: problem.parse_value(v) if isinstance(v, str) else v for k, v in req.get("overrides", {}).items()}
    problem.load_problem(req["problem"], overrides)  # a problem that does not load fails here, as in load_problem
    try:
        figures = {"method": "meta", **traced(req["problem"], overrides)}
    except Exception as exc:  # the meta device cannot run it: kforge then runs the evaluation alone
        figures = {"method": "unknown", "reason": f"{type(exc).__name__}: {exc}"[:500]}
    return {**figures, "device": device_memory(req.get("device", "cpu"))}


def handlers() -> dict:
    return {"estimate_memory": estimate}
