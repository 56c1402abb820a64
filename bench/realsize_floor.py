"""The floor of one correctness trial at a problem's own size, measured in one process with nothing
between the steps: draw the inputs on the GPU, run the reference, run the candidate, compare on the
GPU. kforge's per-trial cost (EvalResult phases_s.correctness_trials / trials) is judged against it.
Also times reference and candidate with CUDA events (L2 flushed before each call, as kforge does),
so the speedups of the three harnesses can be put side by side.
    python bench/realsize_floor.py PROBLEM CANDIDATE [--trials 5] [--reps 30] [--json OUT] [--set NAME=VALUE]...
Run with the worker's interpreter on the GPU machine. Candidate code runs unsandboxed here: use
only candidates you wrote."""

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch


def load_module(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cuda_time_ms(fn, inputs, reps: int, flush: torch.Tensor) -> list[float]:
    times = []
    for _ in range(reps):
        flush.zero_()  # evict L2 between calls
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--json")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a size override, as kforge eval --set applies it")
    args = parser.parse_args()
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False  # kforge's strict precision policy
    torch.backends.cudnn.allow_tf32 = False

    t0 = time.perf_counter()
    if args.set:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "worker"))
        from kforge_worker.common.problem import load_module as load_with_overrides, parse_value

        overrides = {k: parse_value(v) for k, v in (s.split("=", 1) for s in args.set)}
        problem = load_with_overrides(args.problem, "problem", overrides)
    else:
        problem = load_module(args.problem, "problem")
    candidate = load_module(args.candidate, "candidate")
    build_s = time.perf_counter() - t0
    torch.manual_seed(0)
    init = problem.get_init_inputs()
    with torch.device(device):
        torch.manual_seed(0)
        ref = problem.Model(*init).to(device)
        torch.manual_seed(0)
        new = candidate.ModelNew(*init).to(device)
    new.load_state_dict(ref.state_dict())

    trial_s, matches = [], []
    with torch.no_grad():
        for trial in range(args.trials):
            torch.cuda.synchronize()
            a = time.perf_counter()
            torch.manual_seed(100 + trial)
            with torch.device(device):
                inputs = problem.get_inputs()
            expected = ref(*inputs)
            got = new(*inputs)
            match = bool(torch.allclose(got, expected, atol=1e-4, rtol=1e-4)) and got.shape == expected.shape
            torch.cuda.synchronize()
            trial_s.append(time.perf_counter() - a)
            matches.append(match)
            del expected, got
        flush = torch.empty(256 << 20, dtype=torch.int8, device=device)
        for fn in (ref, new):  # warm-up
            for _ in range(3):
                fn(*inputs)
        eager = cuda_time_ms(ref, inputs, args.reps, flush)
        cand = cuda_time_ms(new, inputs, args.reps, flush)
    result = {
        "problem": args.problem, "candidate": args.candidate, "device": torch.cuda.get_device_name(),
        "import_s": build_s, "trial_s": trial_s, "trial_mean_s": statistics.mean(trial_s),
        "all_match": all(matches), "eager_ms": statistics.median(eager), "candidate_ms": statistics.median(cand),
        "speedup_vs_eager": statistics.median(eager) / statistics.median(cand),
        "input_bytes": sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor)),
    }
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f)
    return 0 if result["all_match"] else 1


if __name__ == "__main__":
    sys.exit(main())
