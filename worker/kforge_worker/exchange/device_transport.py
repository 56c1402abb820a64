"""Whether an evaluation's device tensors travel as device buffers, and the backend that moves them.

On a CUDA device that supports buffers shared by file descriptor, the reference keeps its trials on
the device and every CUDA tensor in a set crosses between the processes as a CUDA VMM buffer
(device_buffers.py) passed by file descriptor next to the set's sealed memfd: no host copy on either
side. ``KFORGE_DEVICE_TRANSPORT=host`` (a variable the GPU targets pass to their workers), or a device
without that support, sends every tensor through the memfd instead. bench/device_transport_check.sh
is the GPU run that proves the device path (bench/results/).

A backend exports a storage's bytes into a fresh buffer of its own (never memory of the exporting
process's allocator) and imports a buffer another process sent as a private copy: the sender keeps
its mapping and could go on writing, so the trusted side never reads a received buffer in place.
The candidate maps a correctness trial's inputs in place on the lean path (``import_view``): the
reference serves each such set once and never reads its buffers again.
"""

import os
import stat
from typing import Optional

import torch

from kforge_worker.exchange import device_buffers, tensors, transport
from kforge_worker.common.errors import EnvironmentProblem

ENV = "KFORGE_DEVICE_TRANSPORT"
MODES = ("host", "vmm")


# What the device path holds at once, reference and candidate together, in trial-sized inputs (I)
# and outputs (O), at the busiest moments, measured on an H100 (KFORGE_MEMORY_LOG, bench/results/
# 20261125-h100-full-size):
# - lean (trials of LEAN_BYTES and more): the trials run in turn, a kept trial's buffers are not
#   served between its check and timing, tensors left in reference cycles are collected and cached
#   blocks handed back after every command, the reference draws a timing trial's inputs for its own
#   call when the call runs, a lean block lets go of each input set after its last call. (A
#   correctness trial holds 2 I and 4 O at most: the reference's inputs and their published set,
#   which the candidate uses in place, and the outputs, their snapshot, export and copy.) The busiest
#   moment is the last call of a block on fresh inputs: three published sets, the candidate's
#   buffers and the fresh set (the seen set went after the first call), two kept outputs, the call's
#   and its kept copy: 5 I and 4 O (worker/tests/test_device_memory.py measures the block in CI).
#   36_RMSNorm_ at 7 GiB a set ran on the device path with one set more than that (6 I and 4 O,
#   bench/results/20261125-h100-realsize-kforge); it had peaked at 11.1 sets with the device's
#   contexts, and run out of memory, before the reference parked its last outputs and let go of its
#   fresh inputs and the fresh block kept three calls' outputs instead of four.
# - without lean timing: three timing sets, kept in both processes, and the kept outputs of a block on
#   fresh inputs (a timing block's five calls and the fresh call's): 11 I and 11 O (22 trial-sized
#   tensors measured at that block's last call, 18 during the timing blocks), and the float64 audit on
#   the device.
# The forward's temporaries beyond its outputs come on top, twice for the float64 audit.
LEAN_BYTES = 1 << 30  # a trial-sized set from which on timing is lean
DEVICE_PATH_SHARE = 0.85  # of the device's free memory: contexts, allocator slack, kernels' own scratch


def lean(figures: dict) -> bool:
    """Whether timing keeps only what a block needs (two input sets, two kept outputs, nothing
    between blocks): trials whose inputs or outputs take LEAN_BYTES and more."""
    return max(int(figures.get("input_bytes", 0)), int(figures.get("output_bytes", 0))) >= LEAN_BYTES


def device_bytes(figures: dict) -> int:
    """The most the device path holds at once for a problem (``figures``: memory_estimate.trace's)."""
    i, o = int(figures.get("input_bytes", 0)), int(figures.get("output_bytes", 0))
    temporaries = max(0, int(figures.get("forward_peak_bytes", 0)) - o)
    if lean(figures):
        return 5 * i + 4 * o + temporaries
    return 11 * i + 11 * o + 3 * temporaries


def within_share(nbytes: int, free_bytes: int) -> bool:
    """Whether ``nbytes`` more on the device leave the share of its free memory the device path keeps
    for contexts, allocator slack and kernels' own scratch."""
    return nbytes <= DEVICE_PATH_SHARE * free_bytes


def fits_on_device(figures: dict, free_bytes: int) -> bool:
    return within_share(device_bytes(figures), free_bytes)


def select(device: str, environ=os.environ, supported=None, fits=lambda: True) -> str:
    """"vmm" on a CUDA device unless the variable asks for "host", the device cannot share buffers
    by file descriptor (``supported(index)``, default device_buffers.supported) or a trial's copies
    would not fit it (``fits()``); "host" otherwise. Asked for explicitly, "vmm" is used as is."""
    mode = environ.get(ENV, "").strip() or "auto"
    if mode not in MODES + ("auto",):
        raise EnvironmentProblem(f"{ENV}={mode!r}: expected one of {', '.join(MODES)}")
    if mode == "host" or not device.startswith("cuda"):
        return "host"
    if mode == "vmm":
        return "vmm"
    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    return "vmm" if (supported or device_buffers.supported)(index) and fits() else "host"


class StagedExports:
    """What an exporting backend shares with any other: exports made ahead of the set they go in
    (``stage``), handed over by ``export``, and the buffers of a set served once kept for the next
    (``recycle``). A backend says which tensors it ``handles``, makes a fresh buffer holding a
    storage's bytes with ``_copy`` and refills a kept one with ``_fill``; given a ``sums`` dict, both
    may put there tensors.digest's sums of the bytes they copied, keyed by the storage's address and
    size (tensors.copy_with_sums), so that the sender digests the set without reading it again."""

    def __init__(self):
        self._staged = {}  # (address, bytes) of a storage: (the storage's bytes, their buffer)
        self._spares = []  # buffers of the last set recycled, not yet reused

    def stage(self, values, reuse: bool = False) -> None:
        """Exports the storages of ``values`` (None entries skipped) now, for the next ``export``
        of the same storage to hand over: the copies are made while kforge waits anyway (a call's
        outputs, during the deferred-output check's SETTLE_S) instead of when the set is sent (with
        ``reuse``, into recycled buffers where their sizes match). Each entry keeps its storage
        alive, so no other storage can take its address meanwhile."""
        for t in values:
            if isinstance(t, torch.Tensor) and self.handles(t) and t.numel():
                raw = transport.raw_bytes(t.untyped_storage())
                key = (raw.data_ptr(), raw.numel())
                if key not in self._staged:
                    self._staged[key] = (raw, (reuse and self._refilled(raw)) or self._copy(raw))

    def discard_staged(self) -> None:
        """Releases what was staged and not sent."""
        staged, self._staged = self._staged, {}
        for _, buf in staged.values():
            buf.close()

    def export(self, raw: torch.Tensor, reuse: bool = False, sums: Optional[dict] = None):
        """A buffer holding ``raw`` (uint8, contiguous): the one ``stage`` made for its storage, with
        ``reuse`` a recycled one of the same size refilled, else a fresh one (with ``sums``, their
        digest sums taken while copying where the backend can). Its ``fd`` is sent, its ``close()``
        releases it. The copy is finished before this returns."""
        staged = self._staged.pop((raw.data_ptr(), raw.numel()), None)
        if staged is not None:
            return staged[1]
        return (reuse and self._refilled(raw, sums)) or self._copy(raw, sums)

    def _refilled(self, raw: torch.Tensor, sums: Optional[dict] = None):
        """A recycled buffer of ``raw``'s size holding it now, or None where none is kept."""
        for k, buf in enumerate(self._spares):
            if buf.nbytes == raw.numel():
                self._fill(self._spares.pop(k), raw, sums)
                return buf
        return None

    def recycle(self, buffers) -> None:
        """Keeps the buffers of a set the other process was served once, for the next set's
        ``export`` or ``stage`` with ``reuse``: allocating and releasing a trial-sized buffer costs
        about what filling it does. The publisher only ever writes them, as it did before. The
        reference's: the candidate may still map them, so they hold only sets it is served in turn
        anyway (never timing's). The candidate's (a run's outputs): the reference copied them before
        it replied and never maps them again. Spares of an earlier set not reused by now go."""
        self.drop_spares()
        self._spares = list(buffers)

    def drop_spares(self) -> None:
        spares, self._spares = self._spares, []
        for buf in spares:
            buf.close()


class VmmBackend(StagedExports):
    """CUDA tensors as VMM buffers on the current CUDA device."""

    name = "vmm"

    def __init__(self, device_index: int):
        super().__init__()
        self.device = device_index

    def handles(self, t: torch.Tensor) -> bool:
        return t.is_cuda

    def _copy(self, raw: torch.Tensor, sums: Optional[dict] = None) -> device_buffers.DeviceBuffer:
        buf = device_buffers.allocate(raw.numel(), self.device)
        self._fill(buf, raw, sums)
        return buf

    def _fill(self, buf: device_buffers.DeviceBuffer, raw: torch.Tensor, sums: Optional[dict] = None) -> None:
        if raw.numel():
            dst = buf.bytes()[: raw.numel()]
            taken = tensors.copy_with_sums(raw, dst) if sums is not None else None
            if taken is None:
                dst.copy_(raw)
            else:
                sums[(raw.data_ptr(), raw.numel())] = taken
        torch.cuda.synchronize(self.device)  # the copy is done before the descriptor is sent

    def import_view(self, fd: int, nbytes: int) -> torch.Tensor:
        """``nbytes`` of the buffer behind ``fd`` mapped in place, readable and writable; the view
        keeps the mapping while it lives. Only for a buffer its sender never reads again (a trial's
        inputs the reference serves once): the sender could still write to it."""
        if nbytes == 0:
            return self._nothing(fd)
        return device_buffers.import_buffer(fd, nbytes, self.device).bytes()[:nbytes]

    def _nothing(self, fd: int) -> torch.Tensor:
        """An empty storage, from a descriptor that is still checked for what it is."""
        check_descriptor(fd)
        return torch.empty(0, dtype=torch.uint8, device=f"cuda:{self.device}")

    def import_copy(self, fd: int, nbytes: int) -> torch.Tensor:
        """A private uint8 copy of ``nbytes`` of the buffer behind ``fd`` (which stays the caller's).
        A descriptor that is not an exported allocation, or one smaller than ``nbytes``, is refused."""
        if nbytes == 0:
            return self._nothing(fd)
        buf = device_buffers.import_buffer(fd, nbytes, self.device)
        try:
            copy = buf.bytes()[:nbytes].clone()
            torch.cuda.synchronize(self.device)
        finally:
            buf.close()
        return copy


def check_descriptor(fd: int) -> None:
    """What the driver exports is neither a FIFO, a file, a folder nor a socket (import_buffer's test)."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISSOCK(mode):
        raise device_buffers.DeviceBufferError("the descriptor received is not an exported CUDA allocation")


def backend(mode: str, device: str):
    """The backend for ``mode`` on ``device``, or None for the host path."""
    if mode != "vmm":
        return None
    index = torch.device(device).index
    return VmmBackend(index if index is not None else torch.cuda.current_device())
