"""Each worker command's time and device memory (KFORGE_MEMORY_LOG=1) from one evaluation's worker
logs, reference and candidate, on standard output.
    python bench/memlog.py RESULT_JSON               the memory lines of both workers
    python bench/memlog.py RESULT_JSON --timeline    both workers' commands in the order they ran, with
                                                     the time each spent working, releasing memory and
                                                     waiting between commands, and totals per command
RESULT_JSON is the evaluation's --json file; where it is missing (the run was cut off before it wrote
its result) the newest evaluation's logs are read."""

import argparse
import collections
import glob
import json
import os
import sys

ROLES = ("reference", "candidate")


def log_dir(result_path: str):
    doc = json.load(open(result_path)) if os.path.exists(result_path) else {}
    found = (doc.get("env") or {}).get("log_dir")
    if found:
        return found
    logs = sorted(glob.glob(os.path.expanduser("~/.local/share/kforge/logs/eval-*")), key=os.path.getmtime)
    return logs[-1] if logs else None


def log_lines(where, marker: str):
    """(role, line) of both workers' logs that hold ``marker``."""
    for role in ROLES:
        log = os.path.join(where or "", f"{role}.log")
        if where and os.path.exists(log):
            yield from ((role, line) for line in open(log, errors="replace") if marker in line)


def timeline(where) -> list:
    """Every command of both workers as a dict, by the moment it was received."""
    rows = []
    for role, line in log_lines(where, "kforge timeline:"):
        words = line.split("kforge timeline:", 1)[1].split()
        fields = dict(zip(words[1::2], (float(v) for v in words[2::2])))
        rows.append({"role": role, "cmd": words[0], **fields})
    return sorted(rows, key=lambda r: r["received"])


def print_timeline(rows: list) -> None:
    """One line a command: ms working, releasing memory, replying, and the gap since the last reply
    of either worker (kforge's own work and the pipes); then the totals per role and command."""
    if not rows:
        print("no timeline lines (run with KFORGE_MEMORY_LOG=1)")
        return
    totals = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    last_reply = rows[0]["received"]
    print(f"{'at s':>8} {'role':9} {'command':16} {'gap ms':>8} {'work ms':>9} {'release ms':>10} {'reply ms':>8}")
    for r in rows:
        gap = (r["received"] - last_reply) * 1e3
        work, release = (r["handled"] - r["received"]) * 1e3, (r["released"] - r["handled"]) * 1e3
        reply = (r["replied"] - r["released"]) * 1e3
        print(f"{r['received'] - rows[0]['received']:8.3f} {r['role']:9} {r['cmd']:16} {gap:8.1f} {work:9.1f} "
              f"{release:10.1f} {reply:8.1f}")
        total = totals[(r["role"], r["cmd"])]
        total[0] += 1
        total[1] += work
        total[2] += release
        total[3] += max(gap, 0.0)
        last_reply = max(last_reply, r["replied"])
    print(f"\n{'role':9} {'command':16} {'count':>5} {'work ms':>9} {'release ms':>10} {'gap before ms':>13}")
    for (role, cmd), (count, work, release, gap) in sorted(totals.items()):
        print(f"{role:9} {cmd:16} {count:5d} {work:9.1f} {release:10.1f} {gap:13.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result")
    parser.add_argument("--timeline", action="store_true", help="both workers' commands in order, with their gaps")
    args = parser.parse_args()
    where = log_dir(args.result)
    if args.timeline:
        print_timeline(timeline(where))
    else:
        sys.stdout.writelines(f"{role} {line}" for role, line in log_lines(where, "kforge memory:"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
