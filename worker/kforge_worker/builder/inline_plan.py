"""load_inline's build folder, written without building (kforge's trusted builder).

A load_inline build spends its first seconds importing torch before the compilers start: about 2 s
of a 19 s cold build on an H200 machine's CPU. kforge's builder has torch imported already, so it
runs torch's own load_inline here with its two last steps held back, running ninja and importing
the library: the sources and build.ninja in the folder are load_inline's, byte for byte. The
sandboxed build (sandboxed_build._NINJA_SCRIPT) starts ninja first, imports torch while the
compilers run, and then imports the library as load_inline would, so a library that does not load
still fails its build.

Nothing runs here that the candidate chose: load_inline's Python writes text (the sources, the
bindings, the ninja file) into the build folder, and runs only ``ninja --version`` and torch's
version check of the C++ compiler kforge names. Held back as well: load_inline's own precompiled
torch/extension.h (``use_pch``), which torch would compile here with the candidate's flags and keep
in torch's install, and its removal of that header; the library is the same without it (and
kforge's builder has its own, build_pch). SYCL builds, which would run Intel's compiler here, and
ROCm builds, whose hipify pass rewrites the include folders it is given, are refused.
"""

import os
from dataclasses import dataclass
from unittest import mock


@dataclass
class Plan:
    ninja: list           # the command load_inline runs in the build folder
    name: str             # the library's module name (the folder holds NAME.so)
    python_module: bool   # load_inline imports it as a Python module, else loads it as torch ops


def write(params: dict, env: dict) -> Plan:
    """Writes load_inline's sources and build.ninja for ``params`` (build_directory among them) as
    load_inline does under the variables ``env``, and returns how to build and load them. Raises
    what load_inline raises for arguments it refuses."""
    from torch.utils import cpp_extension

    if params.get("sycl_sources") or params.get("with_sycl"):
        raise ValueError("SYCL sources are not built here")
    if cpp_extension.IS_HIP_EXTENSION:
        raise ValueError("kforge's builder does not build load_inline sources for ROCm")
    seen = {}

    def hold_ninja(build_directory: str, verbose: bool, error_prefix: str) -> None:
        # _run_ninja_build's command: ninja -v, and -j only where MAX_JOBS sets it.
        jobs = cpp_extension._get_num_workers(verbose)
        seen["ninja"] = ["ninja", "-v"] + ([] if jobs is None else ["-j", str(jobs)])

    def hold_import(module_name: str, path: str, is_python_module: bool) -> None:
        seen["module"] = (module_name, bool(is_python_module))

    held = {"_run_ninja_build": hold_ninja, "_import_module_from_library": hold_import,
            "_check_and_build_extension_h_precompiler_headers": lambda *args, **kwargs: None,
            "remove_extension_h_precompiler_headers": lambda *args, **kwargs: None,
            # A fresh record of built names: in this process, a name built before is not "already built".
            "JIT_EXTENSION_VERSIONER": cpp_extension.ExtensionVersioner()}
    # patch.multiple raises AttributeError where this torch lacks one of them: then nothing runs.
    with mock.patch.dict(os.environ, env), mock.patch.multiple(cpp_extension, **held):
        cpp_extension.load_inline(**params)
    if "ninja" not in seen or "module" not in seen:
        raise RuntimeError("torch's load_inline did not reach its build: kforge does not know this torch")
    name, python_module = seen["module"]
    return Plan(seen["ninja"], name, python_module)
