"""Turnaround of two kforge trees (before, after) measured together, evaluation by evaluation, on a
machine whose cores are shared: only figures taken at the same moment compare (see
bench/results/20261124-cpu-turnaround-sandbox). The trees take turns A B B A A B ..., so a load that
comes and goes falls on both alike.

- eval: what bench/turnaround.sh measures, one evaluation per process: per round, per problem and per
  tree, a cold `kforge eval --no-compile-baseline` (a fresh KFORGE_CACHE_DIR with the tree's own
  measured peaks copied in) then a cached one (the cache that cold run left). Wall and CPU seconds
  of the kforge process (its workers, builder and compiler included, user + system).
- loop: what bench/loop_turnaround.sh measures: one `kforge run` per tree and problem with the
  stand-in model bench/delayed_llm.py; per evaluation kforge's own wall_seconds. "loop": the
  evaluations with a kept reference and a candidate process started ahead (every build new code),
  "loop-first": the one that started its workers, "loop-retime": the best candidate timed again;
  "loop-run": the whole kforge run (the model's delays included), with its CPU seconds. Unlike
  loop_turnaround.sh, each run starts with the tree's peaks in its cache (no run measures them).

Target cpu, candidates examples/candidates/cpu/{01_relu,14_mean_std_tuple}.py, each tree's own
examples/, worker/ and targets/ (KFORGE_HOME), one worker interpreter for both.

    python bench/turnaround_pair.py --before /work/wt-before/build/kforge --after build/kforge \\
        [--rounds 6] [--loop-runs 3] [--loop-rounds 4] [--delay 4] [--out DIR]

A tree's home is --before-home/--after-home, else the folder above the binary's (build/kforge ->
the checkout), as kforge itself finds it. --out keeps the rows (rows.tsv) and every result's JSON.
"""
import argparse
import json
import os
import pathlib
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
PROBLEMS = ["01_relu", "14_mean_std_tuple"]


def timed(argv, env, log, cwd):
    """Runs argv to completion: (exit code, wall s, CPU s of it and the children it waited for)."""
    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.perf_counter() - start, usage.ru_utime + usage.ru_stime


class Tree:
    def __init__(self, name, binary, home, args, work):
        self.name, self.bin = name, str(pathlib.Path(binary).resolve())
        self.home = pathlib.Path(home or pathlib.Path(self.bin).parent.parent).resolve()
        if not (self.home / "worker" / "kforge_worker").is_dir():
            sys.exit(f"{name}: no worker/kforge_worker under {self.home} (pass --{name}-home)")
        self.args, self.work = args, work / name
        self.work.mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KFORGE_")}
        self.env.update(KFORGE_HOME=str(self.home), KFORGE_STATE_DIR=str(self.work / "state"))
        rev = subprocess.run(["git", "-C", str(self.home), "describe", "--always", "--dirty"],
                             capture_output=True, text=True).stdout.strip()
        self.label = f"{self.bin} (home {self.home}{', ' + rev if rev else ''})"

    def eval(self, problem, cache, tag):
        js = self.work / f"{tag}.json"
        env = dict(self.env, KFORGE_CACHE_DIR=str(cache))
        rc, wall, cpu = timed([self.bin, "-q", "eval", str(self.home / f"examples/problems/{problem}.py"),
                               str(self.home / f"examples/candidates/cpu/{problem}.py"), "--target", "cpu",
                               "--no-compile-baseline", "--python", self.args.python, "--json", str(js)],
                              env, self.work / f"{tag}.log", self.work)
        try:
            status = json.loads(js.read_text())["status"]
        except (OSError, ValueError, KeyError):
            status = f"no result (exit {rc}, see {self.work / tag}.log)"
        return wall, cpu, status

    def loop(self, problem, tag):
        run = self.work / tag
        env = dict(self.env, KFORGE_STATE_DIR=str(run / "state"), KFORGE_CACHE_DIR=str(run / "cache"))
        run.mkdir()
        shutil.copytree(self.work / "peaks-cache" / "peaks", run / "cache" / "peaks")
        llm = (f"exec:{self.args.python} {REPO}/bench/delayed_llm.py "
               f"{self.home}/examples/candidates/cpu/{problem}.py {self.args.delay}")
        rc, wall, cpu = timed([self.bin, "-q", "run", str(self.home / f"examples/problems/{problem}.py"),
                               "--target", "cpu", "--python", self.args.python, "--llm", llm,
                               "--rounds", str(self.args.loop_rounds), "--samples", "1", "--patience", "0",
                               "--sol-stop", "0", "--no-profile", "--no-compile-baseline", "--eval-trials", "5",
                               "--eval-reps", "30", "--eval-warmup", "3", "--out", str(run / "out")],
                              env, run / "run.log", run)
        try:
            con = sqlite3.connect(run / "state" / "kforge.db")
            docs = [(step, json.loads(d)) for step, d in con.execute(
                "SELECT r.step, e.result_json FROM run_evaluations r JOIN evaluations e ON e.id = r.evaluation_id "
                "ORDER BY e.id")]
        except sqlite3.Error:
            docs = []
        if rc != 0 or not docs:
            print(f"  {self.name} {tag}: kforge run exited {rc} with {len(docs)} evaluations, see {run}/run.log")
        out = [("loop-run", wall, cpu, "correct" if rc == 0 and docs else f"exit {rc}")]
        for step, e in docs:
            w = e["env"]["workers"]
            warm = w["candidate"]["origin"] == "started ahead" and w["reference"]["origin"].startswith("kept")
            state = "loop-retime" if step.endswith(".retime") else "loop" if warm else "loop-first"
            out.append((state, e["wall_seconds"], None, e["status"]))
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the before tree's kforge binary")
    ap.add_argument("--after", default=str(REPO / "build" / "kforge"), help="the after tree's (default: build/kforge here)")
    ap.add_argument("--before-home", help="the before tree's KFORGE_HOME (default: the binary's ../..)")
    ap.add_argument("--after-home", help="the after tree's KFORGE_HOME (default: the binary's ../..)")
    ap.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"), help="the worker interpreter, for both")
    ap.add_argument("--rounds", type=int, default=6, help="eval rounds: per problem and tree, one cold + one cached each (6)")
    ap.add_argument("--loop-runs", type=int, default=3, help="kforge runs per problem and tree, 0 for none (3)")
    ap.add_argument("--loop-rounds", type=int, default=4, help="rounds of each kforge run (4)")
    ap.add_argument("--delay", type=float, default=4, help="the stand-in model's answer delay, s (4)")
    ap.add_argument("--problems", default=",".join(PROBLEMS), help="comma-separated (01_relu,14_mean_std_tuple)")
    ap.add_argument("--out", help="keep rows.tsv, logs and JSON here (default: a temporary folder, removed)")
    args = ap.parse_args()
    problems = args.problems.split(",")
    if args.out:
        work = pathlib.Path(args.out).resolve()
        if work.exists() and any(work.iterdir()):
            sys.exit(f"--out {work} is not empty")
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = pathlib.Path(tempfile.mkdtemp(prefix="kforge-turnaround-pair-"))
    trees = [Tree("before", args.before, args.before_home, args, work), Tree("after", args.after, args.after_home, args, work)]
    torch = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"machine: {cpu_model}, {os.cpu_count()} cores; torch {torch.stdout.strip() or '?'}; python {args.python}")
    for t in trees:
        print(f"{t.name}: {t.label}")
    print(f"{args.rounds} eval rounds, {args.loop_runs} loop runs of {args.loop_rounds} rounds (delay {args.delay:g} s) "
          f"per problem and tree; problems {', '.join(problems)}", flush=True)

    rows = []  # (tree, problem, state, round, wall s, CPU s, status, load average)
    tsv = open(work / "rows.tsv", "w")

    def record(tree, problem, state, i, wall, cpu, status):
        rows.append((tree.name, problem, state, i, wall, cpu, status, os.getloadavg()[0]))
        tsv.write("\t".join(str(v) for v in rows[-1]) + "\n")
        tsv.flush()
        if status != "correct":
            print(f"  {tree.name} {problem} {state} {i}: {status}", flush=True)

    started = time.perf_counter()
    for t in trees:  # each tree's device peaks, measured once (not counted)
        t.eval(problems[0], t.work / "peaks-cache", "peaks")
        if not (t.work / "peaks-cache" / "peaks").is_dir():
            sys.exit(f"{t.name}: measuring the peaks left no peaks/ (see {t.work}/peaks.log)")
    turn = 0  # trees alternate A B, B A, ... across every pair of turns

    def order():
        nonlocal turn
        turn += 1
        return trees if turn % 2 else trees[::-1]

    for i in range(args.rounds):
        for p in problems:
            for t in order():
                cache = t.work / f"cache-{p}-{i}"
                shutil.copytree(t.work / "peaks-cache" / "peaks", cache / "peaks")
                record(t, p, "cold", i, *t.eval(p, cache, f"{p}-cold-{i}"))
                record(t, p, "cached", i, *t.eval(p, cache, f"{p}-cached-{i}"))
                if not args.out:
                    shutil.rmtree(cache)
        print(f"  eval round {i + 1}/{args.rounds} done, {time.perf_counter() - started:.0f} s", flush=True)
    for i in range(args.loop_runs):
        for p in problems:
            for t in order():
                for state, wall, cpu, status in t.loop(p, f"loop-{p}-{i}"):
                    record(t, p, state, i, wall, cpu, status)
        print(f"  loop run {i + 1}/{args.loop_runs} done, {time.perf_counter() - started:.0f} s", flush=True)

    def stat(values):
        values = [v for v in values if v is not None]
        return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})" if values else "-"

    print()
    print("| problem | state | n | before wall s, median (min-max) | after wall s | before CPU s | after CPU s | after/before wall | after/before CPU |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for p in problems:
        for state in ("cold", "cached", "loop-first", "loop", "loop-retime", "loop-run"):
            got = {t.name: [r for r in rows if r[:3] == (t.name, p, state)] for t in trees}
            if not any(got.values()):
                continue
            wall = {k: [r[4] for r in v] for k, v in got.items()}
            cpu = {k: [r[5] for r in v] for k, v in got.items()}
            cpu = {k: [c for c in v if c is not None] for k, v in cpu.items()}
            ratio = lambda d: (f"{statistics.median(d['after']) / statistics.median(d['before']):.2f}"
                               if d["before"] and d["after"] else "-")
            n = "/".join(str(len(got[t.name])) for t in trees)
            print(f"| {p} | {state} | {n} | {stat(wall['before'])} | {stat(wall['after'])} | {stat(cpu['before'])} | "
                  f"{stat(cpu['after'])} | {ratio(wall)} | {ratio(cpu)} |")
    bad = [r for r in rows if r[6] != "correct"]
    loads = [r[7] for r in rows]
    print()
    print(f"- {len(rows)} rows, {len(bad)} not correct; load average {min(loads):.2f}-{max(loads):.2f} on "
          f"{os.cpu_count()} cores; {time.perf_counter() - started:.0f} s in all")
    print("- CPU s: the kforge process and all it waited for (workers, builder, compiler), user + system")
    tsv.close()
    if args.out:
        print(f"- rows (tree, problem, state, round, wall s, CPU s, status, load): {work}/rows.tsv")
    else:
        shutil.rmtree(work)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
