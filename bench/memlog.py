"""Each worker command's time and device memory (KFORGE_MEMORY_LOG=1) from one evaluation's worker
logs, reference and candidate, on standard output.
    python bench/memlog.py RESULT_JSON
RESULT_JSON is the evaluation's --json file; where it is missing (the run was cut off before it wrote
its result) the newest evaluation's logs are read."""

import glob
import json
import os
import sys


def log_dir(result_path: str):
    doc = json.load(open(result_path)) if os.path.exists(result_path) else {}
    found = (doc.get("env") or {}).get("log_dir")
    if found:
        return found
    logs = sorted(glob.glob(os.path.expanduser("~/.local/share/kforge/logs/eval-*")), key=os.path.getmtime)
    return logs[-1] if logs else None


def main() -> int:
    where = log_dir(sys.argv[1])
    for role in ("reference", "candidate"):
        log = os.path.join(where or "", f"{role}.log")
        if where and os.path.exists(log):
            sys.stdout.writelines(f"{role} {line}" for line in open(log, errors="replace") if "kforge memory:" in line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
