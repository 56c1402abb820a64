"""torch.compile of the reference: the baseline a kernel must beat besides eager.

Inductor's compiled artifacts are cached on disk (TORCHINDUCTOR_CACHE_DIR, set by kforge), but on
x86 every new process also builds and loads one probe program per SIMD instruction set before it
can use that cache — about 10 s on a 2-core machine. The probe's answer only depends on the CPU,
the compiler and torch, so it is recorded once and reused.

The baseline runs on the evaluation's thread count. Inductor writes the thread count into the C++
kernels it generates (``#pragma omp parallel num_threads(N)``, N = torch.get_num_threads() at compile
time), but its on-disk graph cache is not keyed by it: without a pin, a baseline compiled for two
threads was loaded by a one-thread evaluation and ran N threads against one core's budget. Pinning
``cpp.threads`` (part of the cache key, like all of Inductor's configuration) keeps artifacts of
different thread counts apart; ``compile_threads`` keeps the compile's worker processes within the
same budget.
"""

import hashlib
import json
import os
import platform

import torch


def _probe_cache_path() -> str:
    root = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "kforge", "inductor")
    return os.path.join(root, "kforge-isa-probes.json")


def reuse_vec_isa_probes() -> None:
    """Remembers the answer of each of Inductor's ISA probe builds (VecISA.check_build)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return
    from torch._inductor import cpu_vec_isa

    probe = cpu_vec_isa.VecISA.check_build
    if getattr(probe, "_kforge_cached", False):
        return
    path = _probe_cache_path()
    salt = f"{torch.__version__}|{os.environ.get('CXX', '')}|{sorted(cpu_vec_isa.x86_isa_checker())}"
    try:
        with open(path) as f:
            answers = json.load(f)
    except (OSError, ValueError):
        answers = {}

    def check_build(self, code: str) -> bool:
        key = hashlib.sha256(f"{salt}|{type(self).__name__}|{code}".encode()).hexdigest()
        if key not in answers:
            answers[key] = bool(probe(self, code))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(answers, f)
            os.replace(tmp, path)
        return answers[key]

    check_build._kforge_cached = True
    cpu_vec_isa.VecISA.check_build = check_build


def pin_thread_count() -> int:
    """Makes Inductor generate and cache kernels for this process's thread count."""
    from torch._inductor import config

    threads = torch.get_num_threads()
    config.cpp.threads = threads
    config.compile_threads = max(1, min(threads, config.compile_threads or 1))
    return threads


def compile_model(model: torch.nn.Module, device: str):
    if not device.startswith("cuda"):
        reuse_vec_isa_probes()
        pin_thread_count()
    return torch.compile(model)
