"""The real-size table: per problem, kforge's verdict, speedup and per-trial cost next to the
one-process floor and KernelBench's own harness, from the JSON lines bench/realsize.sh wrote, and
each side's first trial beside its later ones (kforge's from the evaluation's timeline).
    python bench/realsize_report.py RESULTS_DIR   (writes RESULTS_DIR/summary.md and prints it)"""

import json
import statistics
import sys
from pathlib import Path


def read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def by_problem(rows: list[dict]) -> dict[str, dict]:
    return {Path(r["problem"]).name: r for r in rows}


def median_runs(rows: list[dict]) -> dict[str, dict]:
    """Per problem, the run with the median ``trial_mean_s`` of those measured (the lower middle of an
    even count), with ``trial_mean_range_s`` (the smallest and largest of them) and ``runs`` added: the
    floor's first trial alone moves its mean by a third between runs (bench/realsize.sh FLOOR_RUNS)."""
    grouped: dict[str, list[dict]] = {}
    for r in rows:
        grouped.setdefault(Path(r["problem"]).name, []).append(r)
    picked = {}
    for name, runs in grouped.items():
        ordered = sorted(runs, key=lambda r: r.get("trial_mean_s") or 0)
        means = [r.get("trial_mean_s") or 0 for r in ordered]
        picked[name] = {**ordered[(len(ordered) - 1) // 2], "trial_mean_range_s": (means[0], means[-1]),
                        "runs": len(ordered)}
    return picked


def fmt(value, spec: str = ".2f", unit: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{unit}"


def kforge_row(results: Path, name: str) -> dict:
    path = results / f"kforge-{Path(name).stem}.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    result = data["evaluations"][0] if "evaluations" in data else data
    # The main shape's trials (phases_s.correctness_trials times those alone): calibration may raise
    # them above --trials, and correctness.trials also counts the size variants' trials.
    trials = (result.get("calibration") or {}).get("trials") or (result.get("correctness") or {}).get("trials") or 0
    phases = result.get("phases_s") or {}
    per_trial = phases.get("correctness_trials", 0) / trials if trials else None
    return {"status": result.get("status"), "speedup": result.get("speedup_vs_eager"), "per_trial_s": per_trial,
            "trials": trials,
            "wall_s": result.get("wall_seconds"), "ci": [((result.get("speedup") or {}).get("vs_eager") or {}).get(k) for k in ("ci_low", "ci_high")],
            "transport": (result.get("env") or {}).get("device_transport"),
            "retried": [r.get("device_transport") for r in (result.get("memory") or {}).get("retries") or []]}


def kforge_trial_ms(results: Path, name: str, trials: int):
    """(trial 0, the median later trial) in ms of worker work, from the evaluation's timeline
    (bench/memlog.py --timeline), over the main trials that ran in turn (make_trial, the candidate's
    run, check; at most ``trials``): where trials overlap, work no longer adds up to time. The
    waits between commands are not in it. None without a timeline or two such trials."""
    path = results / f"kforge-{Path(name).stem}.timeline"
    if not path.exists():
        return None
    order, work = ("make_trial", "run", "check"), []
    for line in path.read_text().splitlines()[1:]:
        cells = line.split()  # at, role, command, gap, work, release, reply
        if len(cells) < 7 or cells[2] not in order + ("prepare_timing",):
            continue
        if cells[2] != order[len(work) % 3]:
            break  # timing began, or trials overlap from here on
        work.append(float(cells[4]))
    per_trial = [sum(work[i:i + 3]) for i in range(0, len(work) - 2, 3)][:trials]
    return (per_trial[0], statistics.median(per_trial[1:])) if len(per_trial) > 1 else None


def kforge_cell(kf: dict, run: dict) -> str:
    """status, speedup [CI], the data path (device buffers or host), the command's seconds."""
    if not kf:
        if not run:
            return "–"
        seconds = fmt((run.get("command_ms") or 0) / 1e3, ".0f", " s")
        if run["exit"] == 0:
            return f"correct (exit 0; its result file was not kept), {seconds}"
        return f"no result (exit {run['exit']}{', cut off' if run['exit'] == 124 else ''}), {seconds}"
    ci = kf.get("ci") or []
    cell = f"{kf.get('status', '–')}, {fmt(kf.get('speedup'), '.2f', '×')}"
    if None not in ci:
        cell += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    path = {"vmm": "device", "host": "host"}.get(kf.get("transport"), kf.get("transport") or "?")
    if kf.get("retried"):
        path = " then ".join(("device" if t == "vmm" else t or "?") for t in kf["retried"]) + " then " + path
    seconds = (run.get("command_ms") or 0) / 1e3 or kf.get("wall_s")
    return f"{cell}, {path}, {fmt(seconds, '.0f', ' s')}"


def main() -> int:
    results = Path(sys.argv[1])
    floor = median_runs(read_lines(results / "floor.jsonl"))
    kb = by_problem(read_lines(results / "kernelbench.jsonl"))
    builds = by_problem(read_lines(results / "build.jsonl"))
    prebuilds = by_problem(read_lines(results / "prebuild.jsonl"))
    runs = read_lines(results / "kforge.jsonl")
    kforge_runs = by_problem([r for r in runs if "set" not in r])
    names = sorted(set(floor) | set(kb), key=lambda n: (n not in floor, n))
    device = next((r.get("device") for r in floor.values()), "unknown device")
    lines = [f"# Real-size KernelBench problems on {device}", "",
             "Speedups are vs PyTorch eager. Floor: one process, inputs drawn on the GPU, reference and candidate",
             "run and compared on the GPU, nothing in between (bench/realsize_floor.py); per trial, the median",
             "of its runs' means [smallest–largest]. KernelBench: its own",
             "eval_kernel_against_ref (5 correctness trials, 30 timed calls, L2 cleared before every call).",
             "kforge: `kforge eval` at its defaults (5 trials, 30 repetitions, 3 warm-up; L2 flushed per call),",
             "with its build cached (`prebuild`): status, speedup [95% interval], data path, seconds of the command.",
             "The floor disables TF32 (kforge's strict precision); KernelBench leaves cuDNN's TF32 on, so its",
             "convolutions run faster on both sides.", "",
             "| problem | input | floor: speedup | KernelBench: correct, speedup (mean ± std ms), eval wall | kforge: status, speedup | "
             "per trial: floor / kforge | trial 0, later trials (ms): floor; kforge | cold build: load_inline / kforge |",
             "|---|---:|---:|---|---|---|---|---:|"]
    for name in names:
        f, k, b, kf = floor.get(name, {}), kb.get(name, {}), builds.get(name, {}), kforge_row(results, name)
        kb_cell = "–"
        if k:
            stats = k.get("candidate_stats") or {}
            kb_cell = (f"{'yes' if k.get('correct') else 'NO'}, {fmt(k.get('speedup_vs_eager'), '.2f', '×')} "
                       f"({fmt(stats.get('mean'))} ± {fmt(stats.get('std'), '.3f')} ms), {fmt(k.get('eval_s'), '.0f', ' s')}")
        kf_cell = kforge_cell(kf, kforge_runs.get(name, {}))
        floor_trial = f.get("trial_mean_s")
        ratio = (kf["per_trial_s"] / floor_trial) if kf.get("per_trial_s") and floor_trial else None
        spread = ""
        if f.get("runs", 0) > 1:
            low, high = f["trial_mean_range_s"]
            spread = f" [{low:.3f}–{high:.3f}, {f['runs']} runs]"
        trial_cell = f"{fmt(floor_trial, '.3f', ' s')}{spread} / {fmt(kf.get('per_trial_s'), '.3f', ' s')}"
        if ratio:
            trial_cell += f" ({ratio:.1f}×)"
        floor_ms = [1e3 * t for t in f.get("trial_s") or []]
        floor_split = (floor_ms[0], statistics.median(floor_ms[1:])) if len(floor_ms) > 1 else None
        split = "; ".join("–" if x is None else f"{x[0]:.0f}, {x[1]:.0f}"
                          for x in (floor_split, kforge_trial_ms(results, name, kf.get("trials") or 0)))
        lines.append(f"| {name} | {fmt((f.get('input_bytes') or 0) / 1e9, '.2f', ' GB')} | "
                     f"{fmt(f.get('speedup_vs_eager'), '.2f', '×')} | {kb_cell} | {kf_cell} | {trial_cell} | {split} | "
                     f"{fmt((b.get('build_ms') or 0) / 1e3 or None, '.0f', ' s')} / "
                     f"{fmt((prebuilds.get(name, {}).get('build_ms') or 0) / 1e3 or None, '.0f', ' s')} |")
    relu512 = [r for r in runs if r.get("set")]
    if relu512:
        lines += ["", "19_ReLU at batch_size=512 (805 MB in, 805 MB out), `kforge eval` at its defaults:", ""]
        for r in relu512:
            data = kforge_row(results, f"relu512-{r['run']}")
            lines.append(f"- {r['run']}: {kforge_cell(data, r)}")
    text = "\n".join(lines) + "\n"
    (results / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
