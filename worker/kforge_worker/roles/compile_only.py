"""``kforge eval --compile-only`` for CUDA candidates: import the candidate with kernel builds on and
launches off (KFORGE_COMPILE_ONLY=1), so NVRTC/nvcc/load_inline builds are checked without a GPU.
"""

import os
import time

from kforge_kernels import buildinfo
from kforge_worker.common import problem


def compile_candidate(req: dict) -> dict:
    os.environ["KFORGE_COMPILE_ONLY"] = "1"
    start = time.perf_counter()
    module = problem.load_module(req["candidate"], "kforge_candidate")
    seconds = time.perf_counter() - start
    if not hasattr(module, "ModelNew"):
        raise ImportError("the candidate defines no class ModelNew")
    return {"import_seconds": seconds, "builds": buildinfo.events()}
