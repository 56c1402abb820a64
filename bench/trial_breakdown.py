"""Where one correctness trial's time goes, without kforge's scheduling around it: drives the two
worker sessions in one process (make_trial, run, check) and prints each step's milliseconds, then
a cProfile of the later trials.
    python bench/trial_breakdown.py PROBLEM CANDIDATE [--device cuda] [--trials 5] [--set NAME=VALUE]...
Run with the interpreter the workers use (on a GPU machine: /opt/torch/.venv/bin/python3). With
KFORGE_DEVICE_TRANSPORT=vmm the trials are device-resident, and a trial after the first runs the
reference's call in its check (make_trial draws inputs only; the outputs' size is printed as 0)."""

import argparse
import ast
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "worker"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--calibrate", action="store_true",
                        help="calibrate first, as kforge eval does (a tightened check costs every later trial)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="kforge-trials-")
    os.environ["KFORGE_WORKDIR"] = work
    from kforge_worker.roles.candidate import CandidateSession
    from kforge_worker.roles.reference import ReferenceSession

    overrides = dict(s.split("=", 1) for s in args.set)
    overrides = {k: ast.literal_eval(v) for k, v in overrides.items()}
    ref, cand = ReferenceSession(), CandidateSession()
    common = {"seed": 1, "device": args.device, "threads": 0, "precision": "strict"}
    loaded = ref.load_problem({"problem": args.problem, "overrides": overrides, "shared_dir": work, "tag": "main",
                               "variants": 0, **common})
    if args.calibrate:
        report = ref.guard.calibrate(ref, {"seed": 1, "problem": args.problem, "overrides": overrides, "shapes": 1})
        print(f"calibration: {report['summary']}")
    cand.load_candidate({"candidate": args.candidate, "transport": loaded["transport"],
                         "init_inputs": loaded["init_inputs"], "state": loaded["state"], **common})

    def trial(t: int) -> None:
        a = time.perf_counter()
        made = ref.make_trial({"trial": t, "seed": 1, "tag": "main", "check_determinism": t == 0})
        b = time.perf_counter()
        out = f"outputs_main_{t}"
        cand.run({"inputs": made["inputs"], "outputs": out})
        c = time.perf_counter()
        checked = ref.check({"trial": t, "candidate_outputs": out})
        d = time.perf_counter()
        print(f"trial {t}: make_trial {1e3 * (b - a):.1f} ms, run {1e3 * (c - b):.1f} ms, check {1e3 * (d - c):.1f} ms"
              f" (match {checked['match']}; inputs {made['input_bytes'] / 1e6:.1f} MB, outputs "
              f"{made.get('output_bytes', 0) / 1e6:.1f} MB)")

    trial(0)
    profile = cProfile.Profile()
    profile.enable()
    for t in range(1, args.trials):
        trial(t)
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
