"""Per-trial cost of kforge's correctness check on the CPU target against the floor, side by side.

kforge: `kforge eval --no-timing` of an honest candidate, sandboxed as usual; per trial =
phases_s.correctness_trials / correctness.trials. Floor: the same trials in this one process with
nothing between the steps: draw the inputs, run the reference, run the candidate, compare
(torch.allclose at kforge's fp32 tolerance), with the thread count kforge's workers used. Each
repeat runs kforge and then the floor, and the ratio is taken per repeat (both see the same load).
    python bench/cpu_trial_ratio.py [--kforge build/kforge] [--repeats 5] [--trials 5] [--mb 64] [--json OUT]
Defaults: examples/problems/01_relu.py with dim set so that its input is --mb MB (float32), and the
native candidate examples/candidates/cpu/01_relu.py.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "worker"))

import torch  # noqa: E402


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kforge_trial_seconds(kforge: str, problem: Path, candidate: Path, sets: list, trials: int, work: Path) -> tuple:
    out = work / "result.json"
    cmd = [kforge, "-q", "eval", str(problem), str(candidate), "--no-timing", "--trials", str(trials),
           "--seed", "7", "--json", str(out)] + [a for s in sets for a in ("--set", s)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if not out.exists():
        raise SystemExit(f"kforge eval failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-2000:]}")
    result = json.loads(out.read_text())
    if result["status"] != "correct":
        raise SystemExit(f"kforge judged the honest candidate {result['status']}: {result.get('error')}")
    n = result["correctness"]["trials"]
    return result["phases_s"]["correctness_trials"] / n, n, result["env"]["threads"], result


def floor_trial_seconds(problem, candidate, trials: int) -> float:
    init = problem.get_init_inputs()
    torch.manual_seed(0)
    ref = problem.Model(*init).eval()
    new = candidate.ModelNew(*init)
    if isinstance(new, torch.nn.Module):
        new.load_state_dict(ref.state_dict())
        new.eval()
    seconds = []
    with torch.no_grad():
        for trial in range(trials):
            start = time.perf_counter()
            torch.manual_seed(100 + trial)
            inputs = problem.get_inputs()
            expected = ref(*inputs)
            got = new(*inputs)
            if not torch.allclose(got, expected, atol=1e-4, rtol=1e-4):
                raise SystemExit("the candidate is wrong in the floor's own check")
            seconds.append(time.perf_counter() - start)
            del inputs, expected, got
    return statistics.median(seconds)


def spread(values: list) -> dict:
    ordered = sorted(values)
    return {"median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1],
            "iqr": [ordered[len(ordered) // 4], ordered[(3 * len(ordered)) // 4]] if len(ordered) >= 4 else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kforge", default=str(ROOT / "build" / "kforge"))
    parser.add_argument("--problem", default=str(ROOT / "examples" / "problems" / "01_relu.py"))
    parser.add_argument("--candidate", default=str(ROOT / "examples" / "candidates" / "cpu" / "01_relu.py"))
    parser.add_argument("--mb", type=float, default=64.0, help="input size in MB (sets dim of the default problem)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.repeats < 1 or args.trials < 1 or args.mb <= 0:
        parser.error("--repeats, --trials and --mb must be positive")
    problem_path, candidate_path = Path(args.problem).resolve(), Path(args.candidate).resolve()
    problem = load_module(problem_path, "bench_problem")
    if not (isinstance(getattr(problem, "batch_size", None), int) and isinstance(getattr(problem, "dim", None), int)):
        parser.error(f"{problem_path.name} has no integer batch_size and dim for --mb to size")
    dim = int(args.mb * 1e6 / 4 / problem.batch_size)
    problem.dim = dim
    sets = [f"dim={dim}"]
    os.environ.setdefault("KFORGE_STATE_DIR", tempfile.mkdtemp(prefix="kforge-ratio-state-"))
    candidate = load_module(candidate_path, "bench_candidate")
    rows = []
    with tempfile.TemporaryDirectory(prefix="kforge-ratio-") as tmp:
        for repeat in range(args.repeats):
            per_trial, n, threads, _ = kforge_trial_seconds(args.kforge, problem_path, candidate_path, sets, args.trials,
                                                            Path(tmp))
            torch.set_num_threads(threads)
            floor = floor_trial_seconds(problem, candidate, n)
            rows.append({"repeat": repeat, "kforge_s": per_trial, "floor_s": floor, "ratio": per_trial / floor,
                         "trials": n, "threads": threads})
            print(f"repeat {repeat}: kforge {per_trial:.3f} s/trial ({n} trials), floor {floor:.3f} s/trial, "
                  f"ratio {per_trial / floor:.2f}x", flush=True)
    summary = {
        "problem": str(problem_path), "candidate": str(candidate_path), "set": sets,
        "input_mb": problem.batch_size * dim * 4 / 1e6, "threads": rows[0]["threads"],
        "kforge_s_per_trial": spread([r["kforge_s"] for r in rows]),
        "floor_s_per_trial": spread([r["floor_s"] for r in rows]),
        "ratio": spread([r["ratio"] for r in rows]), "rows": rows,
        "machine": f"{os.cpu_count()} cores, torch {torch.__version__}",
    }
    r = summary["ratio"]
    print(f"ratio kforge / floor per trial: median {r['median']:.2f}x (min {r['min']:.2f}x, max {r['max']:.2f}x, "
          f"{args.repeats} repeats)")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
