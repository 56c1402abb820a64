"""How often each verdict comes out when the machine is busy: `kforge eval` of the same candidates
run after run while busy loops compete for the cores.

    .venv/bin/python bench/verdicts_under_load.py --runs 10 --busy 2 --json OUT.json \\
        --case "tests/adversarial/problems/matmul.py tests/adversarial/cheats/content_cache_hidden.py --set n=512 --sol-slack 1000" \\
        --case "tests/adversarial/problems/relu.py tests/adversarial/honest/relu_native.py"

Each --case is a problem, a candidate and any extra `kforge eval` flags, split like a shell line. The
cases alternate within each run, so load drifts over all of them alike. Per case it prints how many
runs ended in each status (and error kind), and the cached-results measurement of every run
(docs/checks.md): the rounds of fresh sets timed, and per round the fastest fresh call over the lower
quartile of the calls on seen sets and over the candidate's median timed call (both over 10x: the
round looks cached).
"""

import argparse
import collections
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON = ["--no-compile-baseline", "--warmup", "1", "--seed", "7"]


def fresh_figures(result: dict) -> dict:
    fresh = (result.get("timing") or {}).get("fresh_inputs") or {}
    rounds, claimed = fresh.get("rounds") or [], fresh.get("claimed_ms") or 0
    if not rounds or not claimed:
        return {"rounds": len(rounds)}
    return {"rounds": len(rounds),
            "over_quartile": [min(r["fresh_calls_ms"]) / r["seen_lower_quartile_ms"] for r in rounds],
            "over_claimed": [min(r["fresh_calls_ms"]) / claimed for r in rounds]}


def span(values: list, fmt: str) -> str:
    return f"{fmt.format(min(values))} to {fmt.format(max(values))}" if values else "-"


def run_case(kforge: str, case: list, out_dir: str, index: int, reps: int) -> dict:
    problem, candidate, *extra = case
    out = os.path.join(out_dir, f"r{index}.json")
    started = time.monotonic()
    proc = subprocess.run([kforge, "eval", problem, candidate, "--json", out, "--reps", str(reps), *COMMON, *extra],
                          capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - started
    if not os.path.exists(out):
        return {"status": "no result", "kind": f"exit {proc.returncode}", "seconds": seconds}
    with open(out) as f:
        doc = json.load(f)
    result = doc.get("evaluations", [doc])[0]
    return {"status": result["status"], "kind": (result.get("error") or {}).get("kind"), "seconds": seconds,
            **fresh_figures(result)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kforge", default=os.path.join(ROOT, "build", "kforge"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--busy", type=int, default=2, help="busy loops beside the evaluations")
    parser.add_argument("--reps", type=int, default=10, help="timed repetitions per evaluation")
    parser.add_argument("--case", action="append", required=True, help="PROBLEM CANDIDATE [FLAGS...]")
    parser.add_argument("--json", help="where to write every run's figures")
    args = parser.parse_args()
    cases = [shlex.split(c) for c in args.case]
    for case in cases:
        if len(case) < 2:
            parser.error(f"--case needs a problem and a candidate: {case}")
    busy = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.busy)]
    runs = collections.defaultdict(list)
    try:
        with tempfile.TemporaryDirectory(prefix="kforge-load-") as tmp:
            for r in range(args.runs):
                for i, case in enumerate(cases):
                    name = os.path.basename(case[1])
                    runs[name].append(run_case(args.kforge, case, tmp, len(cases) * r + i, args.reps))
                    got = runs[name][-1]
                    print(f"run {r + 1}/{args.runs} {name}: {got['status']} {got.get('kind') or ''} "
                          f"({got['seconds']:.1f} s)", file=sys.stderr, flush=True)
    finally:
        for p in busy:
            p.kill()
    print(f"{args.runs} runs per case, {args.reps} timed repetitions, {args.busy} busy loops, {os.cpu_count()} cores\n")
    print("| candidate | verdicts | rounds | fastest fresh / seen lower quartile | fastest fresh / median timed call |")
    print("|---|---|---|---|---|")
    for name, got in runs.items():
        verdicts = collections.Counter(f"{g['status']} {g.get('kind') or ''}".strip() for g in got)
        quartile = [x for g in got for x in g.get("over_quartile", [])]
        claimed = [x for g in got for x in g.get("over_claimed", [])]
        print(f"| {name} | {', '.join(f'{n} {v}' for v, n in verdicts.most_common())} | "
              f"{', '.join(sorted({str(g['rounds']) for g in got if 'rounds' in g}))} | {span(quartile, '{:.2f}×')} | "
              f"{span(claimed, '{:.2f}×')} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": args.runs, "reps": args.reps, "busy": args.busy, "cases": args.case, "results": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
