"""bench/loop_quality.sh's helpers: the single-shot reply's code, the pending requests, the table.

  loop_quality_report.py extract REPLY.md CANDIDATE.py   the reply's last ```python block
  loop_quality_report.py pending STATE                    requests still waiting for a reply
  loop_quality_report.py report STATE PROBLEMS.txt        the table (Markdown) on stdout
  loop_quality_report.py candidates STATE DEST            every program the model wrote (the loop's
                                                          transcripts and the single-shot replies) as
                                                          DEST/NAME.cK.py and DEST/NAME.single.py
"""
import json
import math
import re
import sys
from pathlib import Path


def extract(reply: Path, out: Path) -> None:
    blocks = re.findall(r"```(?:python|py)\s*\n(.*?)```", reply.read_text(), re.S)
    if not blocks:
        sys.exit(f"{reply}: no ```python block")
    out.write_text(blocks[-1])


def program(text: str) -> str | None:
    blocks = re.findall(r"```(?:python|py)\s*\n(.*?)```", text, re.S)
    return blocks[-1] if blocks else None


def candidates(state: Path, dest: Path) -> None:
    """The programs of each run's latest transcript part (a resumed run records the whole conversation)."""
    dest.mkdir(parents=True, exist_ok=True)
    parts: dict[str, Path] = {}
    for part in (state / "transcripts").glob("*.part*.jsonl"):
        name, number = part.name.rsplit(".part", 1)
        if name not in parts or int(number.split(".")[0]) > int(parts[name].name.rsplit(".part", 1)[1].split(".")[0]):
            parts[name] = part
    for name, part in sorted(parts.items()):
        k = 0
        for line in part.read_text().splitlines():
            code = program((json.loads(line).get("response") or {}).get("text") or "")
            if code:
                (dest / f"{name}.c{k}.py").write_text(code)
                k += 1
        print(f"{name}: {k} programs from {part.name}")
    for reply in sorted((state / "single").glob("*/reply.md")):
        code = program(reply.read_text())
        if code:
            (dest / f"{reply.parent.name}.single.py").write_text(code)


def pending(state: Path) -> None:
    for run_dir in sorted((state / "loop").glob("*")):
        taken = set()
        if (run_dir / "taken.txt").exists():
            taken = {int(n) for n in (run_dir / "taken.txt").read_text().split()}
        for request in sorted(run_dir.glob("request-*.json")):
            number = int(request.stem.split("-")[1])
            answered = any((run_dir / f"reply-{number:04d}.{ext}").exists() for ext in ("md", "json"))
            if number not in taken and not answered:
                print(f"loop   {run_dir.name}: {request.with_suffix('.md')} -> reply-{number:04d}.md")
    for single in sorted((state / "single").glob("*")):
        if not (single / "reply.md").exists():
            print(f"single {single.name}: {single / 'request.md'} -> reply.md")


def claim(result: dict) -> dict | None:
    """vs eager, vs compile and vs the faster baseline, each {point, ci_low, ci_high}, of a correct EvalResult."""
    if not result or result.get("status") != "correct":
        return None
    speedup = result.get("speedup") or {}
    eager, compiled = speedup.get("vs_eager"), speedup.get("vs_compile")
    if not eager:
        return None
    faster = min((s for s in (eager, compiled) if s), key=lambda s: s["point"])
    return {"eager": eager, "compile": compiled, "faster": faster,
            "sol": (result.get("sol") or {}).get("candidate_pct_of_sol")}


def run_results(db: Path) -> tuple[dict | None, dict | None, str]:
    """Round 0's best and the run's best as EvalResults (their latest evaluation), and the run's status."""
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("select re.step, e.result_json from run_evaluations re join evaluations e "
                       "on e.id = re.evaluation_id order by e.id").fetchall()
    status = con.execute("select status from runs where id = 1").fetchone()
    summary_row = con.execute("select summary_json from runs where id = 1").fetchone() if status else None
    by_candidate: dict[str, dict] = {}  # step prefix r0.s0.a1 -> its latest EvalResult
    for step, text in rows:
        by_candidate[".".join(step.split(".")[:3])] = json.loads(text)
    summary_file = db.parent / "summary.json"  # the latest call's --json; the store's copy otherwise
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else \
        json.loads(summary_row[0]) if summary_row and summary_row[0] else {}
    rounds = summary.get("best_by_round") or []
    r0 = by_candidate.get(rounds[0]["step"]) if rounds and rounds[0].get("round") == 0 else None
    best_step = (summary.get("best") or {}).get("step")
    best = by_candidate.get(best_step) if best_step else None
    finished = (db.parent / "finished").exists()
    return r0, best, ("finished" if finished else "in progress") if status else "not started"


def fmt(c: dict | None, key: str) -> str:
    if not c or not c.get(key):
        return "-"
    s = c[key]
    return f"{s['point']:.2f}x [{s['ci_low']:.2f}, {s['ci_high']:.2f}]"


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def report(state: Path, problems_file: Path) -> None:
    names = [Path(line.strip()).stem for line in problems_file.read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    rows, g = [], {"r0": [], "best": [], "single": []}
    for name in names:
        db = state / "db" / name / "kforge.db"
        r0, best, status = run_results(db) if db.exists() else (None, None, "not started")
        single_json = state / "single" / name / "eval.json"
        single_result = json.loads(single_json.read_text()) if single_json.exists() else None
        if single_result and "evaluations" in single_result:
            single_result = single_result["evaluations"][0]
        cols = {"r0": claim(r0), "best": claim(best), "single": claim(single_result)}
        for key, c in cols.items():
            g[key].append(c["faster"]["point"] if c else 1.0)  # no correct kernel: PyTorch is kept (1.0x)
        single_status = (single_result or {}).get("status", "no reply")
        rows.append((name, status, cols, single_status))
    print("| problem | run | round 0 vs faster | best vs eager | best vs compile | best vs faster | best % SOL "
          "| single-shot vs eager | single-shot vs compile | single-shot vs faster |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, status, cols, single_status in rows:
        sol = cols["best"]["sol"] if cols["best"] and cols["best"]["sol"] is not None else None
        single = (fmt(cols["single"], "eager"), fmt(cols["single"], "compile"), fmt(cols["single"], "faster")) \
            if cols["single"] else (single_status, "-", "-")
        print(f"| {name} | {status} | {fmt(cols['r0'], 'faster')} | {fmt(cols['best'], 'eager')} | "
              f"{fmt(cols['best'], 'compile')} | {fmt(cols['best'], 'faster')} | "
              f"{'-' if sol is None else f'{sol:.1f}%'} | {' | '.join(single)} |")
    print()
    print(f"Geomean over the faster of eager and torch.compile (a problem without a correct kernel counts 1.0x, "
          f"PyTorch kept): round 0 {geomean(g['r0']):.2f}x, loop best {geomean(g['best']):.2f}x, "
          f"single-shot {geomean(g['single']):.2f}x; loop best / single-shot "
          f"{geomean(g['best']) / geomean(g['single']):.2f}x.")


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "extract" and len(sys.argv) == 4:
        extract(Path(sys.argv[2]), Path(sys.argv[3]))
    elif command == "pending" and len(sys.argv) == 3:
        pending(Path(sys.argv[2]))
    elif command == "candidates" and len(sys.argv) == 4:
        candidates(Path(sys.argv[2]), Path(sys.argv[3]))
    elif command == "report" and len(sys.argv) == 4:
        report(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        sys.exit(__doc__)
