"""kforge's builder from two source trees, side by side in one run: cold builds of one load_inline
candidate with each tree's precompiled headers (its round 0 makes them), the trees taking turns.
    git worktree add /tmp/before HEAD~1
    python bench/builder_ab.py /tmp/before . [--candidate C] [--rounds 3] [--json OUT]
Each build runs in a fresh interpreter with torch imported first, as bench/inline_build.py builds.
Prints one JSON line per build (the tree, the round, seconds, ninja's steps) and a summary line with
each tree's median of the rounds after the first."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# One build by the tree in argv[1]: candidate argv[2], folders under argv[3], label argv[4].
_BUILD = r"""
import json, os, sys
import torch  # noqa: F401  (imported before the clock starts, as in bench/inline_build.py)
sys.path[:0] = [os.path.join(sys.argv[1], "worker"), os.path.join(sys.argv[1], "bench")]
import inline_build
from kforge_worker import gpu_env
gpu_env.apply()
params = inline_build.captured_params(sys.argv[2])
params["name"] = f"{params['name']}_{sys.argv[4]}"
_, row = inline_build.kforge_build(params, sys.argv[3], sys.argv[4], pch_dir=os.path.join(sys.argv[3], "pch"))
print(json.dumps(row))
"""


def build(tree: str, candidate: str, root: str, label: str) -> dict:
    r = subprocess.run([sys.executable, "-c", _BUILD, tree, candidate, root, label], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr[-800:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs=2)
    parser.add_argument("--candidate", default=str(ROOT / "bench" / "realsize" / "candidates" / "19_ReLU.py"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    trees = [os.path.abspath(t) for t in args.trees]
    roots = {tree: tempfile.mkdtemp(prefix="builder-ab-") for tree in trees}
    seconds = {tree: [] for tree in trees}
    for tree in trees:
        os.makedirs(os.path.join(roots[tree], "pch"))
    for round_ in range(args.rounds + 1):
        for tree in trees:
            row = {"tree": tree, "round": round_, **build(tree, args.candidate, roots[tree], f"r{round_}_{time.time_ns()}")}
            if round_ and "seconds" in row:
                seconds[tree].append(row["seconds"])
            print(json.dumps(row), flush=True)
    summary = {"candidate": os.path.basename(args.candidate), "cpus": os.cpu_count(),
               "median_s": {tree: statistics.median(s) if s else None for tree, s in seconds.items()},
               "seconds": seconds}
    print(json.dumps(summary))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(summary) + "\n")
    return 0 if all(seconds.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
