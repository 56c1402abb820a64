"""ATen's operator declarations cut to those a load_inline CUDA source can reach (kforge's builder).

torch/types.h, which load_inline puts first in every CUDA source, includes ATen/Functions.h, and that
includes the declarations of every ATen operator (``#include <ATen/ops/X.h>``, 1335 of them in torch
2.11): 3.6 of the 12.9 MB that the header preprocesses to, parsed by each of nvcc's passes (cudafe++,
cicc and the host compiler). A kernel and its launcher name a handful.

So the lighter attempt of kforge's builder (cuda_header_choice) puts a folder of its own first on
the include path, holding a Functions.h and a NativeFunctions.h that are torch's with only these
operators' includes kept: those torch's own headers name (``at::X``, ``at::symint::X``,
``native::X``, in any header of torch's include folder, these two among them). The operators the
candidate's source names (every identifier of it that is an operator's name, so no overload set it
uses is cut) are included after load_inline's own three includes, each through torch's own header,
with a ``#line`` that keeps the source's line numbers. Every operator either side names is declared
exactly as torch declares it; a source that still does not compile (a name made by the
preprocessor's ``##``) is built as written.

The folder is made once per torch install, from torch's headers alone (nothing of a candidate), by
the trusted builder into the read-only folder of precompiled headers ($KFORGE_PCH_DIR), whose
headers are made with it on the include path (build_pch).
"""

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile

VERSION = "1"
_FOLDER_PREFIX = "lean-aten-"
_HEADERS = ("Functions.h", "NativeFunctions.h")
_OPERATOR_INCLUDE = re.compile(r"^#include <ATen/ops/([A-Za-z_][A-Za-z0-9_]*)\.h>$", re.M)
_NAMED_BY_TORCH = re.compile(r"\b(?:at::(?:symint::|native::)?|native::)([A-Za-z_][A-Za-z0-9_]*)")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NATIVE_NAME = re.compile(r"\bnative::([A-Za-z_][A-Za-z0-9_]*)")


def torch_include() -> str:
    import torch

    return os.path.join(os.path.dirname(torch.__file__), "include")


def _folder_name(include: str) -> str:
    stamps = []
    for name in _HEADERS:
        st = os.stat(os.path.join(include, "ATen", name))
        stamps.append([name, st.st_size, st.st_mtime_ns])
    data = json.dumps([VERSION, os.path.realpath(include), stamps])
    return _FOLDER_PREFIX + hashlib.sha256(data.encode()).hexdigest()[:24]


def operators(include: str) -> list:
    """The operators torch's Functions.h declares, in its order (read once per process)."""
    return list(_operators(include))


@functools.lru_cache(maxsize=4)
def _operators(include: str) -> tuple:
    with open(os.path.join(include, "ATen", "Functions.h")) as f:
        return tuple(_OPERATOR_INCLUDE.findall(f.read()))


def named_by_torch(include: str) -> set:
    """Every name torch's headers (outside ATen/ops) use as an operator's: at::X, at::symint::X, native::X."""
    names = set()
    ops_dir = os.path.join(include, "ATen", "ops")
    for root, dirs, files in os.walk(include):
        if root == ops_dir:
            dirs.clear()
            continue
        for name in files:
            if name.endswith((".h", ".hpp", ".cuh")):
                with open(os.path.join(root, name), errors="replace") as f:
                    names.update(_NAMED_BY_TORCH.findall(f.read()))
    return names


def cut(text: str, keep: set, suffix: str = "") -> str:
    """A generated header's text without the operator includes (``ATen/ops/X{suffix}.h``) not in ``keep``."""
    include = re.compile(rf"^#include <ATen/ops/([A-Za-z_][A-Za-z0-9_]*){re.escape(suffix)}\.h>\n", re.M)
    return include.sub(lambda m: m.group(0) if m.group(1) in keep else "", text)


def _write(include: str, target: str) -> None:
    keep = named_by_torch(include) & set(operators(include))
    for name, suffix in zip(_HEADERS, ("", "_native")):
        with open(os.path.join(include, "ATen", name)) as f:
            text = f.read()
        with open(os.path.join(target, "ATen", name), "w") as f:
            f.write(cut(text, keep, suffix))


def folder(base: str = None, create: bool = True):
    """The lean headers' folder for the installed torch in ``base`` (default $KFORGE_PCH_DIR), made
    there where missing and ``create``; None where there is no such folder."""
    base = base or os.environ.get("KFORGE_PCH_DIR")
    if not base:
        return None
    include = torch_include()
    path = os.path.join(base, _folder_name(include))
    if os.path.isdir(path) or not create:
        return path if os.path.isdir(path) else None
    from kforge_worker.builder import build_folders

    staging = tempfile.mkdtemp(dir=base, prefix=".lean-")
    try:
        os.mkdir(os.path.join(staging, "ATen"))
        _write(include, staging)
        build_folders.publish(staging, path, lambda: os.path.isdir(path))  # as the cache's libraries
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return path


def with_operator_includes(sources: list, include: str) -> list:
    """The CUDA sources with an include of each operator they name (and of its native declarations
    where they name ``native::X``) before their first line, which keeps its number (load_inline's
    three includes come first: it is line 4 of cuda.cu)."""
    text = "\n".join(sources)
    known = set(operators(include))
    named = sorted(known & set(_IDENTIFIER.findall(text)))
    native = sorted(known & set(_NATIVE_NAME.findall(text)))
    lines = [f"#include <ATen/ops/{op}.h>" for op in named] + [f"#include <ATen/ops/{op}_native.h>" for op in native]
    if not lines:
        return list(sources)
    return ["\n".join(lines) + "\n#line 4\n" + sources[0], *sources[1:]]
