"""What happens between timed repetitions, outside the timed region: the inputs are swapped and the
outputs kept, so every repetition can later be proven.

Before repetition i the input set that kforge scheduled for it is copied into the timing buffers (on
the device the tensors live on; the same buffers every time, so a result remembered from an earlier
repetition belongs to other inputs). After it, the outputs are copied aside and two facts noted: did
the call leave its inputs as they were, and are the outputs plain tensors. Only after the block
returns does kforge pick, at random, the repetitions whose kept outputs the reference checks: while
it runs, the candidate cannot know which calls will be looked at, so it has to get every one right.

Cost per repetition: one copy of the inputs, one of the outputs, one comparison of the inputs; all
outside the timer, on one intra-op thread (one_thread). The kept outputs of one block stay on the
device until the next block.
"""

import contextlib
import ctypes
import time
from typing import List, Optional, Sequence

import torch

from kforge_worker.exchange.tensors import leaves as _leaves  # the tensors of a nested value, in order

_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_MEMCMP = ctypes.CDLL(None).memcmp
_MEMCMP.restype = ctypes.c_int
_MEMCMP.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]


def _plain(t: torch.Tensor) -> bool:
    return (type(t) is torch.Tensor or type(t) is torch.nn.Parameter) and t.device.type != "meta"


def _device_copy(t: torch.Tensor) -> torch.Tensor:
    """A copy on the same device that runs no subclass Python code."""
    with torch._C.DisableTorchFunction():
        return torch.Tensor.clone(torch.Tensor.detach(t))


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN equals NaN when its bits do), on the tensors' device."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    with torch._C.DisableTorchFunction():
        if _one_span_on_the_cpu(a) and _one_span_on_the_cpu(b):
            # Three times torch.equal's speed on one thread (1.0 against 3.3 ms for 16 MB): the inputs
            # of every timed repetition are compared so (Block._keep).
            return _MEMCMP(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()) == 0
        as_int = _SAME_SIZE_INT.get(a.element_size())
        if a.is_floating_point() and as_int is not None:
            return torch.equal(torch.Tensor.view(a, as_int), torch.Tensor.view(b, as_int))
        return torch.equal(torch.Tensor.nan_to_num(a) if a.is_floating_point() else a,
                           torch.Tensor.nan_to_num(b) if b.is_floating_point() else b)


def _one_span_on_the_cpu(t: torch.Tensor) -> bool:
    """A plain, contiguous CPU tensor whose bytes say all its values do: floating-point or integer
    (a bool's byte 2 is True as its byte 1 is), so equal bytes are equal bits, and nothing else."""
    return _plain(t) and t.device.type == "cpu" and not t.is_quantized \
        and (t.is_floating_point() or (t.dtype != torch.bool and not t.is_complex())) \
        and t.layout == torch.strided and t.is_contiguous()  # a sparse tensor has no is_contiguous


@contextlib.contextmanager
def one_thread():
    """The work between repetitions on one intra-op thread. On a loaded machine each parallel copy
    waits for the pool's other threads to get a CPU: a 256 KB set copied, kept and compared took
    32-48 ms on 2 threads of 2 loaded cores, 0.05 ms on one. That wait is kforge's clock's too, so
    it made the untimed work of every block (and the reference's measure of it, which bounds what a
    candidate may claim) a noisy multiple of the repetitions, where the clock floor needs a small,
    steady figure (src/eval/clock_floor.h). The timed call itself gets the pool as configured."""
    threads = torch.get_num_threads()
    if threads <= 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def write_inputs(buffers: list, source: Sequence) -> None:
    """Copies an input set into the timing buffers (same shapes) or rebinds the entries that differ."""
    with torch.no_grad():
        for i, new in enumerate(source):
            dst = buffers[i]
            if isinstance(dst, torch.Tensor) and isinstance(new, torch.Tensor) and dst.shape == new.shape \
                    and dst.dtype == new.dtype:
                torch.Tensor.copy_(dst, new)
            else:
                buffers[i] = new


class Block:
    """One block of timed repetitions: the swap before each, the snapshot after each."""

    def __init__(self, buffers: list, sources: List[Sequence], schedule: Optional[List[int]],
                 correctness_types: set, own_sources: bool = False):
        self.buffers = buffers
        self.sources = sources
        self.schedule = schedule
        # Sources fetched for this block alone (lean timing) go after their last scheduled call: a
        # block on fresh inputs no longer holds the seen set during its fresh calls.
        self.own_sources = own_sources
        self.correctness_types = correctness_types
        self.returned: list = []        # the call's return value, set by the timed function
        self.returned_structure = None  # the outputs' structure, tensors left out (outputs_of)
        self.kept: list = []            # per repetition: copies of its output tensors
        self.inputs_changed: List[int] = []
        self.new_types: set = set()
        self.untimed_ns = 0  # spent here, between repetitions: kforge's clock sees it, the timer does not

    def source(self, rep: int) -> Sequence:
        return self.sources[self.schedule[rep]] if self.schedule else self.sources[0]

    def before(self, rep: int) -> None:
        start = time.perf_counter_ns()
        with one_thread():
            write_inputs(self.buffers, self.source(rep))
        self.untimed_ns += time.perf_counter_ns() - start

    def after(self, rep: int) -> None:
        start = time.perf_counter_ns()
        with one_thread():
            self._keep(rep)
            self.returned.clear()  # kept as a copy: the next call's outputs need not share the device with these
        if self.own_sources and self.schedule and self.schedule[rep] not in self.schedule[rep + 1:]:
            self.sources[self.schedule[rep]] = None
        self.untimed_ns += time.perf_counter_ns() - start

    def _keep(self, rep: int) -> None:
        outputs = self.returned[0] if self.returned else None
        leaves = _leaves(outputs)
        for t in leaves:
            if not _plain(t):
                name = type(t).__module__ + "." + type(t).__qualname__
                if name not in self.correctness_types:
                    self.new_types.add(name)
        self.kept.append([_device_copy(t) if _plain(t) else None for t in leaves] if leaves else None)
        self.returned_structure = _skeleton(outputs)
        source = self.source(rep)
        if any(isinstance(b, torch.Tensor) and isinstance(s, torch.Tensor) and not same_bits(b, s)
               for b, s in zip(self.buffers, source)):
            self.inputs_changed.append(rep)

    def release_live(self) -> None:
        """Lets go of the buffers, the sets and the last call's outputs; outputs_of still works."""
        self.buffers = self.sources = None
        self.returned.clear()

    def facts(self) -> dict:
        return {"inputs_changed": self.inputs_changed[:20], "inputs_changed_count": len(self.inputs_changed),
                "new_output_types": sorted(self.new_types), "untimed_ms": self.untimed_ns / 1e6}

    def outputs_of(self, rep: int, on_host: bool = True):
        """Repetition ``rep``'s kept outputs, in the structure the call returned: on the CPU, or where
        they were kept (on the device: for the device transport)."""
        if rep < 0 or rep >= len(self.kept):
            raise ValueError(f"no repetition {rep} in the last block ({len(self.kept)} ran)")
        kept = self.kept[rep]
        if kept is None:
            raise RuntimeError(f"repetition {rep} returned no tensors")
        copies = iter(kept)
        return _rebuild(self.returned_structure, copies, on_host)


_SLOT = object()  # where a tensor was, in an output's structure kept without its tensors


def _skeleton(obj):
    if isinstance(obj, torch.Tensor):
        return _SLOT
    if isinstance(obj, (list, tuple)):
        return type(obj)(_skeleton(x) for x in obj)
    if isinstance(obj, dict):
        return {k: _skeleton(v) for k, v in obj.items()}
    return obj


def _rebuild(obj, copies, on_host: bool):
    if obj is _SLOT:
        t = next(copies)
        return None if t is None else t.cpu() if on_host else t
    if isinstance(obj, (list, tuple)):
        return type(obj)(_rebuild(x, copies, on_host) for x in obj)
    if isinstance(obj, dict):
        return {k: _rebuild(v, copies, on_host) for k, v in obj.items()}
    return obj
