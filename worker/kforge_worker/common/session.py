"""State shared by both worker roles: device, thread count, seeding and the per-trial seed rule."""

import gc
import hashlib
import importlib
import importlib.util
import os
import random
import sys
import time

import torch

from kforge_kernels import buildinfo
from kforge_worker.common import protocol
from kforge_worker.common.errors import EnvironmentProblem

def setup(device: str, threads: int) -> None:
    if threads > 0:
        torch.set_num_threads(threads)
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise EnvironmentProblem(
                f"device {device} requested, but torch {torch.__version__} sees no GPU (torch.cuda.is_available() is "
                "False): run on a machine with an NVIDIA GPU and driver, or check candidates with --compile-only"
            )
        index = torch.device(device).index  # "cuda" alone means the current device
        torch.cuda.set_device(index if index is not None else torch.cuda.current_device())
    _no_progress_monitor()


def _no_progress_monitor() -> None:
    """tqdm starts a monitor thread (``tqdm_monitor``) with its first visible progress bar, and that
    thread outlives the call. A toolchain that shows a bar while it builds at the first forward call
    (Helion on torch 2.11) would leave it running, and the concurrency check would blame the
    candidate. A monitor only refreshes stalled bars, so none is started."""
    if importlib.util.find_spec("tqdm") is None:
        return
    import tqdm

    tqdm.tqdm.monitor_interval = 0


def warm(req: dict, checks=()) -> dict:
    """Readies torch, the device's context and the usual imports before any work arrives, so that a
    worker started ahead of an evaluation answers its first real command at once. ``checks``: the
    role's own first calls on a GPU (each takes the device), run here so that no trial pays for them:
    a first digest in the candidate's process built its NVRTC kernel in its empty private cache,
    0.25 s of the first trial on an H200."""
    start = time.perf_counter()
    device = req.get("device", "cpu")
    setup(device, int(req.get("threads", 0)))
    if device.startswith("cuda"):
        torch.empty(1, device=device)
        for check in checks:
            try:
                check(torch.device(device))
            except Exception:  # the trial that needs it meets the same failure, and reports it there
                pass
        torch.cuda.synchronize()
        buildinfo.forget()  # the kernels of those checks are the worker's, not builds of a candidate
    for name in req.get("preload", []):  # the target's [worker] preload: what its candidates usually import
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # the candidate that needs it reports the error itself
    return {"seconds": time.perf_counter() - start}


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % (2**32))
    except ImportError:
        pass


def input_secret() -> int:
    """A per-evaluation secret of 63 bits, drawn by the trusted reference and never sent anywhere:
    the seeds of the inputs a candidate meets derive from it (trial_seed)."""
    return int.from_bytes(os.urandom(8), "little") >> 1


def trial_seed(secret: int, base_seed: int, trial: int) -> int:
    """The seed of trial ``trial``'s inputs (fresh and shape-variant sets included): BLAKE2b keyed with
    the reference's ``secret``, so that a candidate which knows the published ``base_seed`` (it seeds
    the weights, and the candidate's process sees it set) and every rule here still cannot redraw an
    input set before it is handed over. 63 bits: torch.manual_seed takes them on every device."""
    digest = hashlib.blake2b(f"{base_seed}:{trial}".encode(), key=secret.to_bytes(8, "little"), digest_size=8)
    return int.from_bytes(digest.digest(), "little") >> 1


def set_precision(policy: str) -> None:
    """strict: no TF32 anywhere, so fp32 means fp32. relaxed: allow TF32 matmuls and convolutions."""
    allow = policy == "relaxed"
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")


RELEASE_CACHED_ABOVE = 1 << 30  # bytes the caching allocator may hold unused between commands
# Correctness trials allocate the same trial-sized blocks command after command. Handing them back
# and taking them again cost 12-14 ms per command at 6 GiB on an H200 (the candidate's run, the
# reference's check; bench/results/20261127-h200-trials), so between these commands a worker keeps
# its cached blocks while at least this share of the device stays free: room for the other
# process's trial (2 I + 4 O for both at once) and for the float64 audit, which the reference
# moves to the host when the device lacks room for it. Only a correctness trial's: timing holds its
# input sets beside the trial, and a block kept beside them ran the candidate's call on fresh inputs
# out of device memory on an H100 (36_RMSNorm_, 7.5 GB a set).
TRIAL_COMMANDS = ("make_trial", "run", "check")
KEEP_CACHED_WHILE_FREE = 0.5
FIRST_TIMING_TRIAL = 1000  # timing's trials from here on (fresh inputs, then its extra sets: src/eval/timing_phase.cc)


def correctness_trial(cmd: str, request: dict) -> bool:
    """Whether a command is one step of a correctness trial (not of timing)."""
    return (cmd in TRIAL_COMMANDS and not request.get("timing")
            and int(request.get("trial", 0)) < FIRST_TIMING_TRIAL)


def half_free(free: int, total: int) -> bool:
    """The rule of a process that knows nothing of its evaluation: KEEP_CACHED_WHILE_FREE of the device free."""
    return free >= KEEP_CACHED_WHILE_FREE * total


# Whether this process keeps its cached blocks between a correctness trial's commands, from the
# device's free and total bytes. A process that knows more about its evaluation sets its own (the
# reference's, from the problem's figures and the evaluation's reservation: ReferenceSession).
_keeps_cache = half_free


def set_cache_rule(rule) -> None:
    """``rule(free, total)`` from now on; None: half_free again."""
    global _keeps_cache
    _keeps_cache = rule or half_free


def cached_unused_bytes() -> int:
    """Device memory the caching allocator holds for this process but no tensor uses (0 before CUDA
    starts): its own allocations take it back before they fail."""
    if not torch.cuda.is_initialized():
        return 0
    return torch.cuda.memory_reserved() - torch.cuda.memory_allocated()


def release_cached_memory(keep_if_room: bool = False) -> None:
    """Frees what only reference cycles still hold, then hands the caching allocator's unused blocks
    back to the driver, once the process holds more than 1 GiB of device memory (on the CPU, of host
    memory); with ``keep_if_room``, not while the process's rule (set_cache_rule) says there is room,
    by default while KEEP_CACHED_WHILE_FREE of the device is free. Tensors
    caught in a cycle (a failed call's frames, a candidate's closures) wait for the
    cyclic collector, which counts objects, not bytes: at KernelBench's own sizes each of them is a
    trial-sized set the other process cannot use (on the CPU target at 1 GB, the two workers grew by a
    trial's worth of such tensors per trial until the kernel's out-of-memory killer ended one)."""
    if not torch.cuda.is_initialized():
        if _resident_bytes() > RELEASE_CACHED_ABOVE:
            gc.collect()
        return
    if torch.cuda.memory_reserved() <= RELEASE_CACHED_ABOVE:
        return
    gc.collect()
    if cached_unused_bytes() > RELEASE_CACHED_ABOVE:
        if keep_if_room:
            free, total = torch.cuda.mem_get_info()
            if _keeps_cache(free, total):
                return
        torch.cuda.empty_cache()


def _resident_bytes() -> int:
    """This process's resident memory (0 where /proc cannot tell)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


# What these leave lives for the evaluation. prepare_timing compiles the torch.compile baseline: its
# objects (dynamo's, inductor's, sympy's) made each later collection take 50-100 ms, 5 s of an
# evaluation at KernelBench's sizes. A reference kept for the next evaluation unfreezes at its reset.
FREEZE_AFTER = ("warm", "load_problem", "load_candidate", "prepare_timing")


def after_command(cmd: str, seconds: float, request: dict = None) -> None:
    """Runs after every command, before its reply: releases device memory the command left (the
    reference and the candidate take turns on one GPU, and what one process keeps cached the other
    cannot use). With $KFORGE_MEMORY_LOG set, logs the command's time and device memory."""
    if cmd in FREEZE_AFTER:
        # The objects of imports and loading (torch's alone are 160,000) stay for the process's life:
        # the cyclic collector stops scanning them, so that collecting what a command left in
        # reference cycles takes a millisecond rather than 50.
        gc.collect()
        gc.freeze()
    release_cached_memory(keep_if_room=correctness_trial(cmd, request or {}))
    if not torch.cuda.is_initialized():
        return
    if os.environ.get(protocol.COMMAND_LOG):
        gib = 1 << 30
        free, total = torch.cuda.mem_get_info()
        print(f"kforge memory: {cmd} ({seconds:.3f} s): peak {torch.cuda.max_memory_allocated() / gib:.2f} GiB "
              f"allocated, {torch.cuda.max_memory_reserved() / gib:.2f} GiB reserved; after "
              f"{torch.cuda.memory_allocated() / gib:.2f} GiB allocated, {torch.cuda.memory_reserved() / gib:.2f} GiB "
              f"reserved; device {(total - free) / gib:.2f} GiB used (both processes, buffers between them)",
              file=sys.stderr, flush=True)
        torch.cuda.reset_peak_memory_stats()


def private_path(name: str) -> str:
    return os.path.join(os.environ.get("KFORGE_WORKDIR", "."), name)
