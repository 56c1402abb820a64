"""Which torch headers a load_inline CUDA source is compiled against first (kforge's builder).

load_inline puts ``#include <torch/types.h>`` first in every CUDA source; candidates include
<torch/extension.h> on top out of habit. That header adds torch's C++ frontend (torch/all.h) and
pybind11 with Python.h, which nvcc parses three times (cudafe++, cicc and the host compiler): 71 s
against 34 s for a KernelBench-style ReLU on an H200 machine's CPU (bench/inline_build.py). A kernel
and its launcher need none of it. So the builder first compiles the CUDA source with that include
resolved to torch/types.h (cuda_headers/torch/extension.h, found before torch's own through -I);
where the source does not compile so, or visibly uses what only the full header declares (pybind11,
torch's nn, optim, jit, linalg, fft, ... namespaces), it is built exactly as written. main.cpp (the
bindings load_inline generates) always sees the full header. A source that compiles both ways is
compiled from the same declarations of everything it uses, so the library is the same one. Where
kforge keeps precompiled headers, that attempt's ATen also declares only the operators torch's
headers and the source name (lean_aten): a third less for each of nvcc's passes to parse.
"""

import os
import re

from kforge_worker.builder import lean_aten

HEADERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_headers")

# Names only torch/extension.h brings: a source that uses one goes straight to the full header.
_NEEDS_FULL_HEADER = re.compile(
    r"\bpy::|\bpybind11\b|\bPYBIND11_|\bPy[A-Z]\w*\(|"
    r"\btorch::(?:nn|optim|jit|data|serialize|autograd|fft|linalg|special|nested|sparse|cuda|mps|xpu|"
    r"python|utils)::")


def light_params(params: dict, lean_folder: str = None):
    """load_inline's arguments with the CUDA sources' torch/extension.h resolved to torch/types.h, or
    None where that cannot apply (no CUDA source, no implicit headers, a source that needs more).
    With ``lean_folder`` (lean_aten) ATen declares only the operators torch's headers and the
    sources name."""
    sources = params.get("cuda_sources")
    if isinstance(sources, str):
        sources = [sources]
    if not sources or params.get("no_implicit_headers") or not all(isinstance(s, str) for s in sources):
        return None
    if any(_NEEDS_FULL_HEADER.search(s) for s in sources):
        return None
    flags = params.get("extra_cuda_cflags") or []
    if isinstance(flags, str):
        flags = [flags]
    if not lean_folder:
        return dict(params, extra_cuda_cflags=[f"-I{HEADERS}", *flags])
    return dict(params, cuda_sources=lean_aten.with_operator_includes(sources, lean_aten.torch_include()),
                extra_cuda_cflags=[f"-I{HEADERS}", f"-I{lean_folder}", *flags])
