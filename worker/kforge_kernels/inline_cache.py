"""A content-keyed, crash-safe cache for ``torch.utils.cpp_extension.load_inline`` (KernelBench-style
candidates, unchanged).

torch caches an inline extension by its ``name`` alone under $TORCH_EXTENSIONS_DIR: two candidates
that reuse a name (KernelBench candidates often do) rebuild over each other, and a build killed by a
timeout leaves torch's lock file behind, which makes every later build of that name wait forever.
Here the name gets a suffix keyed by everything that shapes the build (sources, flags, the
architectures in TORCH_CUDA_ARCH_LIST, torch, Python, nvcc and the host compiler), the build runs
under an flock (released by the kernel when a process dies, so stale locks cannot exist), and a build
completed earlier is imported directly, without running ninja.

Inside kforge's candidate sandbox the extensions folder is read-only: a build that is not there yet
is asked of kforge's trusted builder over the build channel (kforge_kernels.build_client), which
computes the same key itself, builds in a sandbox of its own and installs only the finished library
(and the completion marker) into a new folder of the cache.
"""

import fcntl
import functools
import hashlib
import importlib.abc
import importlib.util
import inspect
import json
import os
import shutil
import sys
import time

_MODULE = "torch.utils.cpp_extension"
MARKER = "kforge-complete"
_MARKER = MARKER
_HELPER_VERSION = "1"


def _tool_stamp(exe: str) -> list:
    path = shutil.which(exe) if exe else None
    if not path:
        return [exe, None]
    st = os.stat(os.path.realpath(path))
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns]


def _key(bound: dict) -> str:
    import torch

    shaping = {k: v for k, v in bound.items() if k not in ("name", "verbose", "build_directory")}
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    nvcc = shutil.which("nvcc") or os.path.join(cuda_home, "bin", "nvcc")
    data = json.dumps({
        "v": _HELPER_VERSION, "args": shaping, "torch": torch.__version__, "cuda": torch.version.cuda,
        "python": sys.version, "arch": os.environ.get("TORCH_CUDA_ARCH_LIST", ""),
        "nvcc": _tool_stamp(nvcc) if os.path.exists(nvcc) else None,
        "cxx": _tool_stamp(os.environ.get("CXX") or "c++"),
    }, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


# load_inline's arguments a build request may carry (where to build is the builder's choice).
BUILD_ARGUMENTS = {
    "name", "cpp_sources", "cuda_sources", "sycl_sources", "functions", "extra_cflags", "extra_cuda_cflags",
    "extra_sycl_cflags", "extra_ldflags", "extra_include_paths", "with_cuda", "with_sycl", "is_python_module",
    "with_pytorch_error_handling", "keep_intermediates", "use_pch", "no_implicit_headers",
}


def cache_key(params: dict) -> str:
    return _key(params)


def keyed_name(name: str, key: str) -> str:
    return f"{name}_{key}"


def entry_dir(name: str) -> str:
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                   "torch_extensions")
    return os.path.join(root, name)


def complete(directory: str, name: str) -> bool:
    return os.path.exists(os.path.join(directory, MARKER)) and os.path.exists(os.path.join(directory, name + ".so"))


def install() -> None:
    """Replaces ``torch.utils.cpp_extension.load_inline`` with the keyed version (idempotent): now
    when that module is loaded, else the moment it is imported. Importing it (setuptools included)
    costs a few tenths of a second that candidates on the fast compile paths never need."""
    module = sys.modules.get(_MODULE)
    if module is not None:
        _patch(module)
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds torch.utils.cpp_extension as usual, with a loader that patches it right after it runs,
    before any importer can take load_inline from it."""

    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            run_module = spec.loader.exec_module

            def exec_module(module):
                run_module(module)
                _patch(module)

            spec.loader.exec_module = exec_module
        return spec


def _patch(cpp_extension) -> None:
    original = cpp_extension.load_inline
    if getattr(original, "_kforge_keyed", False):
        return
    signature = inspect.signature(original)

    @functools.wraps(original)
    def load_inline(*args, **kwargs):
        from kforge_kernels import build_client, buildinfo

        t0 = time.perf_counter()
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        params = dict(bound.arguments)
        key = _key(params)
        if build_client.available():
            # Inside the sandbox: the cache is read-only, kforge's builder fills it (and computes the
            # same key from the same arguments).
            request = {k: v for k, v in params.items() if k in BUILD_ARGUMENTS}
            name = keyed_name(params["name"], key)
            directory = entry_dir(name)
            done = complete(directory, name)
            how = {}
            if not done:
                reply = build_client.request({"kind": "load_inline", "params": request})
                if not reply.get("ok"):
                    raise RuntimeError(f"Error building extension '{params['name']}': {reply.get('error')}\n"
                                       f"{reply.get('log', '')}")
                directory, name = reply["path"], reply["name"]
                # What kforge's builder compiled cuda.cu against, and whether it had torch imported already.
                for field in ("cuda_headers", "aten_operators", "warm_builder"):
                    if reply.get(field):
                        how[field] = reply[field]
                if isinstance(reply.get("precompiled_headers"), dict):  # kforge_worker/builder/build_pch.py
                    how["precompiled_headers"] = reply["precompiled_headers"]
            module = cpp_extension._import_module_from_library(name, directory, params["is_python_module"])
            buildinfo.record("load_inline", key, done, time.perf_counter() - t0, name=name, **how)
            return module
        params["name"] = keyed_name(params["name"], key)
        build_dir = params.get("build_directory") or cpp_extension._get_build_directory(params["name"], False)
        params["build_directory"] = build_dir
        os.makedirs(build_dir, exist_ok=True)
        with open(os.path.join(build_dir, "kforge.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                done = os.path.exists(os.path.join(build_dir, _MARKER))
                module = None
                if done and hasattr(cpp_extension, "_import_module_from_library"):
                    try:
                        module = cpp_extension._import_module_from_library(params["name"], build_dir,
                                                                            params["is_python_module"])
                    except ImportError:
                        module = None
                if module is None:
                    done = False
                    # We hold the flock, so torch's own lock file can only be left over from a dead build.
                    try:
                        os.unlink(os.path.join(build_dir, "lock"))
                    except FileNotFoundError:
                        pass
                    module = original(**params)
                    open(os.path.join(build_dir, _MARKER), "w").close()
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        buildinfo.record("load_inline", key, done, time.perf_counter() - t0, name=params["name"])
        return module

    load_inline._kforge_keyed = True
    cpp_extension.load_inline = load_inline
