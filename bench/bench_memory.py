"""Peak memory of `kforge bench` against the size of the suite.

Generates a suite of small KernelBench-format problems (and a correct candidate for each) into a
temporary folder, runs `kforge bench --candidates` on the first N of them for each N of --sizes,
and samples the memory of kforge's whole process tree (kforge, its reference and candidate
workers, their sandboxes and compilers) every --interval seconds:
  rss_mb  the sum of the processes' resident sets (shared pages such as torch's libraries are
          counted once per process, so this overstates what the machine loses);
  pss_mb  the sum of their proportional sets (shared pages split between the processes that map
          them), where /proc/PID/smaps_rollup is readable; what the machine actually spends.
A bench that keeps a worker per finished problem grows with N; one that releases them does not.
It passes when the peak RSS at the largest N is at most --max-ratio times the peak at the smallest.

Usage: python3 bench/bench_memory.py [--sizes 10,100] [--kforge BIN] [--python PY] [--out FILE]
(from the repository root, after scripts/setup.sh). Exit status 0 when within the ratio, 1 when not.
"""

import argparse
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Each problem is a different small elementwise function, so each has its own reference worker. The
# candidates repeat the reference's arithmetic: correct, and no PyTorch operator does the whole job.
OPS = ["x * {a} + {b}", "(x - {b}) * {a}", "x * x * {a} + {b}", "x / {a} - {b}", "(x + {b}) * (x - {b}) * {a}"]

PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {expr}


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
"""

CANDIDATE = PROBLEM.replace("class Model(", "class ModelNew(")


def generate_suite(folder: Path, count: int) -> tuple[Path, Path]:
    problems, candidates = folder / "problems", folder / "candidates"
    problems.mkdir()
    candidates.mkdir()
    for i in range(count):
        expr = OPS[i % len(OPS)].format(a=1 + i / 100, b=i / 50)
        (problems / f"p{i:03d}.py").write_text(PROBLEM.format(expr=expr))
        (candidates / f"p{i:03d}.py").write_text(CANDIDATE.format(expr=expr))
    return problems, candidates


def children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])  # the name may contain spaces
        children.setdefault(ppid, []).append(int(entry))
    return children


def tree(root: int) -> list[int]:
    children = children_map()
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(children.get(pid, []))
    return pids


def kib_field(path: str, name: str) -> int | None:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class Sampler(threading.Thread):
    """Samples the process tree under `pid` until stop() and keeps the peaks (MiB)."""

    def __init__(self, pid: int, interval: float):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = 0.0
        self.peak_processes = 0
        self.pss_readable = True
        self.samples = 0
        self._done = threading.Event()

    def run(self):
        while not self._done.is_set():
            rss = pss = 0
            pids = tree(self.pid)
            for pid in pids:
                rss += kib_field(f"/proc/{pid}/status", "VmRSS") or 0
                p = kib_field(f"/proc/{pid}/smaps_rollup", "Pss")
                if p is None and Path(f"/proc/{pid}").exists():
                    self.pss_readable = False
                pss += p or 0
            self.peak_rss = max(self.peak_rss, rss / 1024)
            self.peak_pss = max(self.peak_pss, pss / 1024)
            self.peak_processes = max(self.peak_processes, len(pids))
            self.samples += 1
            self._done.wait(self.interval)

    def stop(self):
        self._done.set()
        self.join()


def run_bench(kforge: str, python: str, problems: Path, candidates: Path, n: int, work: Path, interval: float):
    suite = work / f"suite-{n}.txt"
    suite.write_text("".join(f"{p}\n" for p in sorted(problems.glob("*.py"))[:n]))
    env = dict(os.environ, KFORGE_STATE_DIR=str(work / f"state-{n}"), KFORGE_CACHE_DIR=str(work / "cache"))
    cmd = [kforge, "-q", "bench", str(suite), "--target", "cpu", "--candidates", str(candidates), "--jobs", "1",
           "--out", str(work / f"out-{n}"), "--python", python, "--no-compile-baseline", "--eval-trials", "1",
           "--eval-reps", "1", "--eval-warmup", "0", "--seed", "1"]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sampler = Sampler(proc.pid, interval)
    sampler.start()
    output, _ = proc.communicate()
    sampler.stop()
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"kforge bench of {n} problems failed ({proc.returncode}):\n{output}")
    return sampler, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100", help="suite sizes to run, comma-separated")
    parser.add_argument("--kforge", default=os.environ.get("KFORGE_BIN", str(ROOT / "build" / "kforge")))
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"), help="the workers' interpreter")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between samples")
    parser.add_argument("--max-ratio", type=float, default=1.2, help="largest peak / smallest peak allowed")
    parser.add_argument("--out", help="also write the table (Markdown) to this file")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if not sizes or sizes[0] < 1:
        parser.error("--sizes: positive counts, e.g. 10,100")
    for tool, what in [(args.kforge, "--kforge"), (args.python, "--python")]:
        if not shutil.which(tool):
            parser.error(f"{what}: not an executable: {tool}")

    torch = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                           text=True).stdout.strip()
    lines = [f"machine: {socket.gethostname()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
             f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB; torch {torch}; "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
             f"command: kforge bench SUITE --target cpu --candidates DIR --jobs 1 (1 trial, 1 rep, no compile baseline); "
             f"sampled every {args.interval} s", "",
             "| problems | peak RSS sum (MiB) | peak PSS sum (MiB) | peak processes | samples | wall (s) |",
             "|---:|---:|---:|---:|---:|---:|"]
    peaks = {}
    with tempfile.TemporaryDirectory(prefix="kforge-bench-memory-") as tmp:
        work = Path(tmp)
        problems, candidates = generate_suite(work, sizes[-1])
        for n in sizes:
            s, wall = run_bench(args.kforge, args.python, problems, candidates, n, work, args.interval)
            peaks[n] = s.peak_rss
            pss = f"{s.peak_pss:.0f}" if s.pss_readable else "n/a"
            lines.append(f"| {n} | {s.peak_rss:.0f} | {pss} | {s.peak_processes} | {s.samples} | {wall:.0f} |")
            print(lines[-1], flush=True)
    ratio = peaks[sizes[-1]] / peaks[sizes[0]]
    ok = ratio <= args.max_ratio
    lines += ["", f"peak RSS at {sizes[-1]} / at {sizes[0]} problems: {ratio:.2f} "
              f"({'within' if ok else 'OVER'} the {args.max_ratio} limit)"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
