"""Environment defaults of GPU workers, applied before torch builds anything.

load_inline (torch.utils.cpp_extension) compiles for the architectures in TORCH_CUDA_ARCH_LIST, and
without it asks the visible GPU, which fails on a machine without one (kforge eval --compile-only).
Both compile paths therefore follow one setting: KFORGE_CUDA_ARCH (default sm_90a).
"""

import os

from kforge_kernels import cuda


def apply() -> None:
    try:
        sm = cuda.arch()
    except ValueError:
        return  # cuda.compile reports the bad value when a candidate uses it
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", cuda.torch_arch_list(sm))
