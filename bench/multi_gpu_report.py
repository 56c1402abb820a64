"""Table of bench/multi_gpu.sh's results: evaluations per minute per executor and GPU count, and
each problem's speedup over eager with its interval, checked for agreement across GPU counts.

    python bench/multi_gpu_report.py RESULTS_DIR
"""
import json
import sys
from pathlib import Path


def interval(p):
    """The speedup's interval as the bench reports it, else from the timing quartiles
    (eager p25 / candidate p75 .. eager p75 / candidate p25: the spread of both sides)."""
    for key in ("speedup_vs_eager_interval", "speedup_interval"):
        if isinstance(p.get(key), list) and len(p[key]) == 2:
            return tuple(p[key])
    s = p.get("timing_spread") or {}
    c, e = s.get("candidate"), s.get("eager")
    if not c or not e or not c.get("p25_ms") or not c.get("p75_ms"):
        return None
    return e["p25_ms"] / c["p75_ms"], e["p75_ms"] / c["p25_ms"]


def main(results):
    runs = []
    for report in sorted(results.glob("*-*/report.json")):
        executor, gpus = report.parent.name.rsplit("-", 1)
        data = json.loads(report.read_text())
        runs.append((executor, int(gpus), data))
    if not runs:
        print(f"no report.json under {results}/*-*/")
        return 1
    host = runs[0][2]["bench"].get("environment", {}).get("host", {})
    print(f"# kforge bench across GPUs ({', '.join(host.get('gpus', [])) or 'unknown GPUs'}, "
          f"{host.get('cpus', '?')} CPUs)\n")
    print("| executor | GPUs | problems | correct | wall (s) | evaluations/min | vs 1 GPU |")
    print("|---|---|---|---|---|---|---|")
    base = {}
    for executor, gpus, data in runs:
        m = data["metrics"]
        wall = data["bench"]["wall_seconds"]
        rate = 60.0 * m["done"] / wall
        base.setdefault(executor, rate)
        print(f"| {executor} | {gpus} | {m['done']} | {m['correct']} | {wall:.1f} | {rate:.1f} | "
              f"{rate / base[executor]:.2f}x |")

    names = sorted({p["name"] for _, _, d in runs for p in d["problems"]})
    cols = [f"{e} {g}" for e, g, _ in runs]
    print("\nSpeedup over eager per problem, [interval] (candidate and eager quartiles):\n")
    print("| problem | " + " | ".join(cols) + " | intervals agree |")
    print("|---|" + "---|" * len(cols) + "---|")
    disagree = 0
    for name in names:
        cells, bounds = [], []
        for _, _, d in runs:
            p = next((q for q in d["problems"] if q["name"] == name), None)
            if not p or p.get("status") != "correct" or not p.get("speedup_vs_eager"):
                cells.append(p["status"] if p else "-")
                continue
            iv = interval(p)
            bounds.append(iv)
            cells.append(f"{p['speedup_vs_eager']:.2f}x" + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else ""))
        ok = all(b for b in bounds) and max(b[0] for b in bounds) <= min(b[1] for b in bounds) if bounds else False
        disagree += not ok
        print(f"| {name} | " + " | ".join(cells) + f" | {'yes' if ok else 'no'} |")
    print(f"\n{len(names) - disagree} of {len(names)} problems have intervals with a common point across all runs.")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
