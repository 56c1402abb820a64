"""Cold builds of a load_inline candidate, side by side in one run: torch's load_inline as the
candidate calls it, and kforge's builder (kforge_worker.sandboxed_build, the compiler unsandboxed
here), each into empty folders. Then both libraries are loaded and called on the same input, and
their outputs must be equal. With --fallback the CUDA source also calls a function only
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
from kforge_worker import gpu_env, sandboxed_build  # noqa: E402

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


def kforge_build(params: dict, root: str, lanes: bool = True) -> tuple:
    """kforge's builder; without ``lanes``, with nvcc's passes in turn as nvcc runs them (PYTORCH_NVCC
    names nvcc itself, which the builder then leaves alone)."""
    label = "kforge" if lanes else "kforge-unsplit"
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.join(root, label, "extensions")
    os.makedirs(os.environ["TORCH_EXTENSIONS_DIR"])
    build_dir = os.path.join(root, label, "build")
    os.makedirs(build_dir)
    request = {k: v for k, v in params.items() if k in inline_cache.BUILD_ARGUMENTS}
    if not lanes:
        os.environ["PYTORCH_NVCC"] = os.path.join(cpp_extension.CUDA_HOME or "/usr/local/cuda", "bin", "nvcc")
    start = time.perf_counter()
    try:
        reply = sandboxed_build.build_load_inline({"kind": "load_inline", "params": request}, [], build_dir, 900)
    finally:
        os.environ.pop("PYTORCH_NVCC", None)
    seconds = time.perf_counter() - start
    module = cpp_extension._import_module_from_library(reply["name"], reply["path"], True)
    return module, seconds, reply.get("cuda_headers")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidate")
    parser.add_argument("--fallback", action="store_true")
    parser.add_argument("--input-shape", default="4096,1024")
    parser.add_argument("--unsplit", action="store_true",
                        help="also build through kforge's builder with nvcc's passes in turn (no nvcc_lanes)")
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
        built, kforge_s, headers = kforge_build(params, root)
        unsplit_s = kforge_build(params, root, lanes=False)[1] if args.unsplit else None
        functions = params["functions"]
        function = functions if isinstance(functions, str) else next(iter(functions))
        same = None
        if torch.cuda.is_available():
            x = torch.randn(*[int(v) for v in args.input_shape.split(",")], device="cuda")
            same = bool(torch.equal(getattr(plain, function)(x.clone()), getattr(built, function)(x.clone())))
    rows = [{"build": "load_inline", "seconds": round(plain_s, 2)},
            {"build": "kforge", "seconds": round(kforge_s, 2), "cuda_headers": headers}]
    if unsplit_s is not None:
        rows.append({"build": "kforge, nvcc unsplit", "seconds": round(unsplit_s, 2), "cuda_headers": headers})
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
