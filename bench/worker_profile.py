"""Where a kforge evaluation's worker processes spend their time, from py-spy's raw samples.

bench/worker_profile.sh records ``py-spy record --subprocesses --format raw`` over one ``kforge eval``;
this prints, for the reference worker and the candidate worker separately, the kforge functions
with the most samples (inclusive: a function's own time and the time of what it calls), so a slow
phase can be traced to the line that costs it.

    python bench/worker_profile.py SAMPLES.txt [--rate HZ] [--top N] [--json OUT]
"""

import argparse
import collections
import json
import re

LINE = re.compile(r'^(.*) (\d+)$')
ROLE = re.compile(r'serve --role (\w+)')


def parse(path: str):
    """(role, frames outermost first, samples) for each line of kforge worker samples."""
    for line in open(path, encoding="utf-8", errors="replace"):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        stack, count = m.group(1), int(m.group(2))
        parts = stack.split(";")
        role = None
        frames = []
        for part in parts:
            if part.startswith("process "):
                r = ROLE.search(part)
                role = r.group(1) if r else role
            else:
                frames.append(part)
        if role:
            yield role, frames, count


def summarise(path: str, rate: float, top: int) -> dict:
    inclusive = collections.defaultdict(collections.Counter)
    total = collections.Counter()
    for role, frames, count in parse(path):
        total[role] += count
        # Inclusive time of each kforge function on the stack, counted once per sample; the innermost
        # frame (what actually ran) is kept too, whatever module it is in.
        seen = {f for f in frames if "kforge" in f}
        if frames:
            seen.add("[self] " + frames[-1])
        for f in seen:
            inclusive[role][f] += count
    return {role: {"seconds": total[role] / rate,
                   "top": [{"function": f, "seconds": n / rate, "share": n / total[role]}
                           for f, n in inclusive[role].most_common(top)]}
            for role in sorted(total)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("samples")
    ap.add_argument("--rate", type=float, default=100.0, help="py-spy's sampling rate (Hz)")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--json")
    args = ap.parse_args()
    summary = summarise(args.samples, args.rate, args.top)
    for role, s in summary.items():
        print(f"== {role} worker: {s['seconds']:.1f} s sampled")
        for row in s["top"]:
            print(f"  {row['seconds']:7.2f} s {100 * row['share']:5.1f}%  {row['function']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
