"""How often each verdict comes out when the machine is busy: `kforge eval` of the same candidates
run after run while busy loops compete for the cores.

    .venv/bin/python bench/verdicts_under_load.py --runs 10 --busy 2 --json OUT.json \\
        --case "tests/adversarial/problems/matmul.py tests/adversarial/cheats/content_cache_hidden.py --set n=512 --sol-slack 1000" \\
        --case "tests/adversarial/problems/relu.py tests/adversarial/honest/relu_native.py"

Each --case is a problem, a candidate and any extra `kforge eval` flags, split like a shell line. The
cases alternate within each run, so load drifts over all of them alike. Per case it prints how many
runs ended in each status (and error kind), and the cached-results measurement of every run
(docs/checks.md): sets timed, the fastest fresh call over the fastest seen call, and the share of
(fresh, seen) pairs in which the fresh call was slower.
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
COMMON = ["--no-compile-baseline", "--reps", "10", "--warmup", "1", "--seed", "7"]


def fresh_figures(result: dict) -> dict:
    fresh = (result.get("timing") or {}).get("fresh_inputs") or {}
    f, s = fresh.get("fresh_calls_ms") or [], fresh.get("seen_calls_ms") or []
    if not f or not s:
        return {"sets": len(f)}
    slower = sum(a > b for a in f for b in s)
    return {"sets": len(f), "fastest_ratio": min(f) / min(s), "pair_share": slower / (len(f) * len(s))}


def span(values: list, fmt: str) -> str:
    return f"{fmt.format(min(values))} to {fmt.format(max(values))}" if values else "-"


def run_case(kforge: str, case: list, out_dir: str, index: int) -> dict:
    problem, candidate, *extra = case
    out = os.path.join(out_dir, f"r{index}.json")
    started = time.monotonic()
    proc = subprocess.run([kforge, "eval", problem, candidate, "--json", out, *COMMON, *extra],
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
                    runs[name].append(run_case(args.kforge, case, tmp, len(cases) * r + i))
                    got = runs[name][-1]
                    print(f"run {r + 1}/{args.runs} {name}: {got['status']} {got.get('kind') or ''} "
                          f"({got['seconds']:.1f} s)", file=sys.stderr, flush=True)
    finally:
        for p in busy:
            p.kill()
    print(f"{args.runs} runs per case, {args.busy} busy loops, {os.cpu_count()} cores\n")
    print("| candidate | verdicts | sets timed | fastest fresh / fastest seen | fresh slower in pairs |")
    print("|---|---|---|---|---|")
    for name, got in runs.items():
        verdicts = collections.Counter(f"{g['status']} {g.get('kind') or ''}".strip() for g in got)
        ratios = [g["fastest_ratio"] for g in got if "fastest_ratio" in g]
        shares = [g["pair_share"] for g in got if "pair_share" in g]
        print(f"| {name} | {', '.join(f'{n} {v}' for v, n in verdicts.most_common())} | "
              f"{', '.join(sorted({str(g['sets']) for g in got if 'sets' in g}))} | {span(ratios, '{:.2f}×')} | "
              f"{span(shares, '{:.0%}')} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": args.runs, "busy": args.busy, "cases": args.case, "results": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
