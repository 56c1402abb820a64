"""nvcc against nvcc_lanes on a load_inline candidate's cuda.cu, side by side in one run: the compile
torch's build runs (its flags, the architectures kforge's builder uses, against torch/types.h as the
builder tries first, or as written with --as-written), run by nvcc itself and by
kforge_worker/nvcc_lanes.py in turn, ``--repeats`` times each, alternating which goes first.
    python bench/nvcc_lanes_speed.py CANDIDATE [--repeats 3] [--as-written] [--json OUT]
Needs nvcc, not a GPU. Prints one JSON line per compile and a summary line (seconds, medians, ratio)."""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from torch.utils import cpp_extension

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "worker"))
from inline_build import captured_params  # noqa: E402
from kforge_worker import cuda_header_choice, gpu_env, nvcc_lanes  # noqa: E402

# Stand-ins that let load_inline write its build folder and stop: the C++ compiler answers torch's
# version check and compiles nothing; "nvcc" records its arguments.
_FAKE_CXX = '#!/bin/sh\ncase " $* " in *" --version "*|*" -dumpversion "*|*" -v "*) exec c++ "$@";; esac\nexit 1\n'
_RECORDER = '#!/bin/sh\nprintf "%s\\0" "$@" > "$(dirname "$0")/nvcc-args"\nexit 1\n'


def nvcc_arguments(params: dict, root: Path) -> tuple:
    """(the build folder, the arguments torch's build passes to nvcc for cuda.cu)."""
    for name, text in (("c++", _FAKE_CXX), ("nvcc", _RECORDER)):
        (root / name).write_text(text)
        (root / name).chmod(0o755)
    build = root / "build"
    build.mkdir()
    env = {"CXX": str(root / "c++"), "PYTORCH_NVCC": str(root / "nvcc")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        cpp_extension.load_inline(**dict(params, build_directory=str(build), verbose=False))
    except Exception:
        pass  # the stand-ins fail the build once nvcc's arguments are recorded
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    recorded = root / "nvcc-args"
    if not recorded.exists():
        raise SystemExit("load_inline did not run nvcc: is CUDA_HOME set, does the candidate have CUDA sources?")
    return build, recorded.read_bytes().decode().split("\0")[:-1]


def timed(argv: list, cwd: Path) -> float:
    start = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{shlex.join(argv[:3])} ... failed:\n{r.stdout}{r.stderr}")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidate")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--as-written", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    gpu_env.apply()
    params = captured_params(args.candidate)
    if not args.as_written:
        params = cuda_header_choice.light_params(params) or params
    nvcc = os.path.join(cpp_extension.CUDA_HOME or "/usr/local/cuda", "bin", "nvcc")
    with tempfile.TemporaryDirectory(prefix="nvcc-lanes-") as root:
        build, nvcc_args = nvcc_arguments(params, Path(root))
        ways = {"nvcc": [nvcc, *nvcc_args], "lanes": [sys.executable, nvcc_lanes.__file__, nvcc, *nvcc_args]}
        seconds = {way: [] for way in ways}
        for repeat in range(args.repeats):
            for way in (list(ways) if repeat % 2 == 0 else list(reversed(ways))):
                seconds[way].append(timed(ways[way], build))
                print(json.dumps({"compile": way, "repeat": repeat, "seconds": round(seconds[way][-1], 2)}), flush=True)
    medians = {way: statistics.median(s) for way, s in seconds.items()}
    summary = {"candidate": os.path.basename(args.candidate), "headers": "as written" if args.as_written else "torch/types.h",
               "seconds": {w: [round(x, 2) for x in s] for w, s in seconds.items()},
               "median_s": {w: round(m, 2) for w, m in medians.items()},
               "lanes_over_nvcc": round(medians["lanes"] / medians["nvcc"], 3), "cpus": os.cpu_count()}
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(summary) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
