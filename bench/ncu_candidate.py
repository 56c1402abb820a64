"""Timing fidelity: Nsight Compute's kernel durations for one candidate, to compare with kforge.

    python bench/ncu_candidate.py measure PROBLEM CANDIDATE [--set N=V ...] [--reps 20] [--ncu ncu]
    python bench/ncu_candidate.py run PROBLEM CANDIDATE [--reference] ...   (the process ncu profiles)

runs ``ncu --clock-control none --metrics gpu__time_duration.sum`` over this same script in ``run``
mode, which builds the candidate on the problem's inputs, warms it up, and calls its forward
``--reps`` times inside a cudaProfilerStart/Stop range (so only those calls' kernels are profiled).
ncu flushes the caches before each kernel by default, as kforge's timer does. Prints one JSON line:
the median over calls of the summed kernel durations of one call, in microseconds.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "worker"))


def run(args) -> None:
    import torch

    from kforge_worker.common import problem

    overrides = dict(s.split("=", 1) for s in args.set)
    overrides = {k: problem.parse_value(v) for k, v in overrides.items()}
    torch.manual_seed(0)
    prob = problem.load_problem(args.problem, overrides)
    init = prob.get_init_inputs()
    model = prob.Model(*init).cuda().eval()
    if args.reference:  # profile the problem's own Model (the candidate argument is ignored)
        cand = model
    else:
        cand = problem.load_module(args.candidate, "kforge_candidate").ModelNew(*init)
    if isinstance(cand, torch.nn.Module) and cand is not model:
        cand = cand.cuda().eval()
        ref_state = model.state_dict()
        with torch.no_grad():
            for name, value in cand.state_dict().items():
                if name in ref_state and ref_state[name].shape == value.shape:
                    value.copy_(ref_state[name])
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in prob.get_inputs()]
    with torch.no_grad():
        for _ in range(3):
            cand(*inputs)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for _ in range(args.reps):
            cand(*inputs)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()


def measure(args) -> None:
    cmd = [args.ncu, "--clock-control", "none", "--profile-from-start", "off", "--metrics",
           "gpu__time_duration.sum", "--csv", "--print-units", "base",
           sys.executable, __file__, "run", args.problem, args.candidate, "--reps", str(args.reps)]
    for s in args.set:
        cmd += ["--set", s]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    durations = []
    for line in r.stdout.splitlines():
        if line.startswith('"') and "gpu__time_duration.sum" in line:
            cells = next(__import__("csv").reader([line]))
            durations.append(float(cells[-1].replace(",", "")))
    if r.returncode != 0 or not durations or len(durations) % args.reps:
        print(json.dumps({"error": f"ncu exit {r.returncode}, {len(durations)} kernel rows for {args.reps} calls",
                          "output": (r.stdout + r.stderr)[-3000:]}))
        sys.exit(1)
    per_call = len(durations) // args.reps
    calls = [sum(durations[i * per_call:(i + 1) * per_call]) / 1000.0 for i in range(args.reps)]
    print(json.dumps({"ncu_median_us": statistics.median(calls), "ncu_min_us": min(calls), "ncu_max_us": max(calls),
                      "kernels_per_call": per_call, "reps": args.reps}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "measure"])
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--reference", action="store_true", help="run the problem's Model instead of the candidate")
    parser.add_argument("--ncu", default=os.environ.get("NCU", "ncu"))
    args = parser.parse_args()
    run(args) if args.mode == "run" else measure(args)


if __name__ == "__main__":
    main()
