"""Cold builds of a load_inline candidate, side by side in one run: torch's load_inline as the
candidate calls it, and kforge's builder (kforge_worker.builder.sandboxed_build, the compiler unsandboxed
here), each into empty folders: without its precompiled headers, making them (the first build of a
flag set) and with them (every later build; kforge_worker/builder/build_pch.py). Then the libraries are
loaded and called on the same input, and their outputs must equal load_inline's. With --fallback the CUDA source also calls a function only
torch/extension.h declares, so kforge's lighter first attempt fails and it builds the source as
written: the cost of that path.
    python bench/inline_build.py CANDIDATE [--fallback] [--unsplit] [--json OUT] [--input-shape 4096,1024]
Run with the worker's interpreter on a machine with nvcc (and a GPU for the call). Prints one JSON
line per build and a summary line."""

import argparse
import importlib.util
import inspect
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils import cpp_extension

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "worker"))
from kforge_kernels import inline_cache  # noqa: E402
from kforge_worker.builder import sandboxed_build  # noqa: E402
from kforge_worker.common import gpu_env

# torch::save is declared by torch/serialize.h, which torch/extension.h includes and torch/types.h does not.
FALLBACK_SOURCE = "\nvoid kforge_bench_save(torch::Tensor t) { torch::save(t, \"unused.pt\"); }\n"


class _Captured(Exception):
    pass


def captured_params(candidate: str) -> dict:
    """load_inline's arguments as the candidate passes them (the module stops at that call)."""
    original = cpp_extension.load_inline
    signature = inspect.signature(original)
    seen = {}

    def capture(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        seen.update(bound.arguments)
        raise _Captured()

    cpp_extension.load_inline = capture
    try:
        spec = importlib.util.spec_from_file_location("candidate", candidate)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    except _Captured:
        pass
    finally:
        cpp_extension.load_inline = original
    if not seen:
        raise SystemExit(f"{candidate} does not call load_inline at import")
    return seen


def plain_build(params: dict, root: str) -> tuple:
    build_dir = os.path.join(root, "plain")
    os.makedirs(build_dir)
    start = time.perf_counter()
    module = cpp_extension.load_inline(**dict(params, build_directory=build_dir, verbose=False))
    return module, time.perf_counter() - start


def kforge_build(params: dict, root: str, label: str, lanes: bool = True, pch_dir: str = None) -> tuple:
    """kforge's builder into empty folders of its own; without ``lanes``, with nvcc's passes in turn
    as nvcc runs them (PYTORCH_NVCC names nvcc itself, which the builder then leaves alone); with
    ``pch_dir``, its precompiled headers kept there (made by its first build of these flags)."""
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(root, label, "extensions")
    os.makedirs(os.environ["TORCH_EXTENSIONS_DIR"])
    build_dir = os.path.join(root, label, "build")
    os.makedirs(build_dir)
    request = {k: v for k, v in params.items() if k in inline_cache.BUILD_ARGUMENTS}
    if not lanes:
        os.environ["PYTORCH_NVCC"] = os.path.join(cpp_extension.CUDA_HOME or "/usr/local/cuda", "bin", "nvcc")
    if pch_dir:
        os.environ["KFORGE_PCH_DIR"] = pch_dir
    start = time.perf_counter()
    try:
        reply = sandboxed_build.build_load_inline({"kind": "load_inline", "params": request}, [], build_dir, 900)
    finally:
        os.environ.pop("PYTORCH_NVCC", None)
        os.environ.pop("KFORGE_PCH_DIR", None)
    seconds = time.perf_counter() - start
    module = cpp_extension._import_module_from_library(reply["name"], reply["path"], True)
    return module, {"build": label, "seconds": round(seconds, 2), "cuda_headers": reply.get("cuda_headers"),
                    "precompiled_headers": reply.get("precompiled_headers"), "steps_s": ninja_steps(build_dir)}


def ninja_steps(build_dir: str) -> dict:
    """Seconds of each step ninja ran in ``build_dir`` (its .ninja_log: start and end in ms), or {}
    where the builder emptied the folder to make headers."""
    try:
        with open(os.path.join(build_dir, ".ninja_log")) as f:
            lines = [line.split("\t") for line in f if not line.startswith("#")]
    except OSError:
        return {}
    return {fields[3]: round((int(fields[1]) - int(fields[0])) / 1000, 2) for fields in lines if len(fields) >= 4}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidate")
    parser.add_argument("--fallback", action="store_true")
    parser.add_argument("--input-shape", default="4096,1024")
    parser.add_argument("--unsplit", action="store_true",
                        help="also build through kforge's builder with nvcc's passes in turn (no nvcc_lanes, no headers)")
    parser.add_argument("--json")
    args = parser.parse_args()
    gpu_env.apply()  # both build for the architectures kforge's builder uses
    params = captured_params(args.candidate)
    if args.fallback:
        sources = params["cuda_sources"]
        params["cuda_sources"] = ([sources] if isinstance(sources, str) else list(sources)) + [FALLBACK_SOURCE]
    tag = f"{time.time_ns()}"
    params["name"] = f"{params['name']}_{tag}"  # nothing cached from an earlier run
    with tempfile.TemporaryDirectory(prefix="inline-build-") as root:
        plain, plain_s = plain_build(params, root)
        rows = [{"build": "load_inline", "seconds": round(plain_s, 2)}]
        libraries = []
        if args.unsplit:
            libraries.append(kforge_build(params, root, "kforge, nvcc unsplit, no headers", lanes=False))
        libraries.append(kforge_build(params, root, "kforge, no headers"))
        # The first build of these flags makes the headers after its library; a later build uses them.
        store = os.path.join(root, "pch")
        os.makedirs(store)
        libraries.append(kforge_build(params, root, "kforge, making its headers", pch_dir=store))
        libraries.append(kforge_build(params, root, "kforge with its headers", pch_dir=store))
        rows += [row for _, row in libraries]
        functions = params["functions"]
        function = functions if isinstance(functions, str) else next(iter(functions))
        same = None
        if torch.cuda.is_available():
            x = torch.randn(*[int(v) for v in args.input_shape.split(",")], device="cuda")
            expected = getattr(plain, function)(x.clone())
            same = all(bool(torch.equal(expected, getattr(m, function)(x.clone()))) for m, _ in libraries)
    kforge_s = rows[-1]["seconds"]
    summary = {"candidate": os.path.basename(args.candidate), "fallback": args.fallback, "builds": rows,
               "kforge_over_load_inline": round(kforge_s / plain_s, 3), "same_outputs": same,
               "cpus": os.cpu_count(), "torch": torch.__version__,
               "device": torch.cuda.get_device_name() if torch.cuda.is_available() else None}
    for row in rows:
        print(json.dumps(row))
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(summary) + "\n")
    return 0 if same is not False else 1


if __name__ == "__main__":
    sys.exit(main())
