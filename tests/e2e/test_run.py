"""`kforge run` end to end on the cpu and opencl targets with scripted models (exec:), plus the
bundled replay transcript of the main job. Each test keeps to a handful of quick evaluations."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from e2e_support import ROOT, HERE

SCRIPTED = HERE / "scripted"
RELU = ROOT / "examples" / "problems" / "01_relu.py"
SWISH = ROOT / "examples" / "problems" / "12_swish.py"
# Quick evaluations: these tests are about the loop, not about precise timings.
# 15 repetitions in blocks of 5: three interleaved rounds, the fewest a head-to-head decides on.
QUICK = ["--no-compile-baseline", "--eval-reps", "15", "--eval-warmup", "1", "--eval-trials", "2", "--seed", "7"]


def scripted(plan: Path, log: Path) -> str:
    return f"exec:{sys.executable} {SCRIPTED / 'model.py'} {plan} {log}"


def calls(log: Path) -> list:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def user_text(call: dict) -> str:
    last = [m for m in call["request"]["messages"] if m["role"] == "user"][-1]
    return "".join(p.get("text", "") for p in last["content"])


def summary_sizes(kforge) -> list:
    return json.loads((kforge.tmp / "out" / "summary.json").read_text())["request_sizes"]


def db(kforge) -> sqlite3.Connection:
    return sqlite3.connect(kforge.tmp / "state" / "kforge.db")


def run_eval(con, run_id: int, step: str) -> dict:
    row = con.execute("SELECT e.result_json FROM run_evaluations r JOIN evaluations e ON e.id = r.evaluation_id "
                      "WHERE r.run_id = ? AND r.step = ?", (run_id, step)).fetchone()
    assert row, f"no evaluation {step}"
    return json.loads(row[0])


def relu_run_args(kforge, log):
    return ["run", RELU, "--target", "cpu", "--llm", scripted(SCRIPTED / "relu" / "plan.json", log),
            "--rounds", "2", "--patience", "0", "--out", kforge.tmp / "out", *QUICK]


def test_compile_error_then_wrong_then_slow_then_fast(kforge):
    log = kforge.tmp / "calls.jsonl"
    proc = kforge.run(*relu_run_args(kforge, log))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    made = calls(log)
    assert [c["rule"] for c in made] == ["1_compile_error.md", "2_wrong.md", "3_slow.md", "analysis.md", "4_fast.md"]

    con = db(kforge)
    # The fix prompt quotes the first compiler error line exactly.
    compile_error = run_eval(con, 1, "r0.s0.a0.eval")
    assert compile_error["status"] == "compile_error"
    first_error = next(line for line in compile_error["error"]["log"].splitlines() if "error:" in line)
    assert "was not declared" in first_error
    assert first_error in user_text(made[1])
    # The next one names the mismatch: max error, index and shape.
    wrong = run_eval(con, 1, "r0.s0.a1.eval")
    mismatch = wrong["correctness"]["mismatch"]
    assert mismatch["index"] == [0, 12345] and mismatch["shape"] == [64, 65536]
    prompt = user_text(made[2])
    assert f"- max abs error: {mismatch['max_abs_error']:.6g}" in prompt
    assert "- worst index: [0, 12345]" in prompt and "- shape: [64, 65536]" in prompt
    # The performance agent saw the slow candidate and its timings; its advice reached the generator.
    analyze = user_text(made[3])
    assert "volatile float v = x[i];" in analyze and "| candidate |" in analyze
    assert "Drop `cflags=[\"-O0\"]`" in user_text(made[4])
    assert "Current best candidate (r0.s0.a2)" in user_text(made[4])
    # A compact request: round 1 starts again from one message carrying the problem, the target notes
    # and the best's source once, not round 0's conversation.
    notes_heading = "## How to write kernels for `cpu`"
    assert [m["role"] for m in made[4]["request"]["messages"]] == ["system", "user"]
    round1 = user_text(made[4])
    assert round1.count(notes_heading) == 1 and round1.count("volatile float v = x[i];") <= 1
    assert "# Round 1" in round1 and "## Reference program (PyTorch), as it runs" in round1
    # Every request states the rules and the device kforge measured, from the first on.
    system = "".join(p.get("text", "") for p in made[0]["request"]["messages"][0]["content"])
    assert "## The rules kforge judges by" in system and "## The device, as kforge measured it" in system
    assert "| PyTorch eager |" in system and "Speed of light:" in system
    assert [s["step"] for s in summary_sizes(kforge)][:1] == ["r0.s0.a0.gen"]

    summary = json.loads((kforge.tmp / "out" / "summary.json").read_text())
    assert summary["best"]["step"] == "r1.s0.a0"
    slow = next(c for c in summary["candidates"] if c["step"] == "r0.s0.a2")
    assert slow["median_ms"] / summary["best"]["median_ms"] >= 5
    assert [r["step"] for r in summary["best_by_round"]] == ["r0.s0.a2", "r1.s0.a0"]
    assert summary["stop_reason"] == "rounds" and summary["usage"]["calls"] == 5
    # What the run ran with, as in every JSON output.
    env = summary["environment"]
    assert env["command_line"][1:3] == ["run", str(RELU)] and env["kforge_version"] and env["torch"]
    assert env["python_version"] and env["host"]["cpu"]
    # One evaluation per candidate, plus a re-measurement for each timing flagged unstable on a busy machine.
    steps = [s for (s,) in con.execute("SELECT step FROM run_evaluations WHERE run_id = 1")]
    assert sorted(s for s in steps if not s.endswith(".retime")) == [
        "r0.s0.a0.eval", "r0.s0.a1.eval", "r0.s0.a2.eval", "r1.s0.a0.eval"]
    assert summary["evaluations"] == len(steps)
    kept = next(c for c in summary["candidates"] if c["step"] == "r1.s0.a0")
    assert kept["decision"] == "accepted" and kept["vs_best"]["ci_low"] > 1
    report = (kforge.tmp / "out" / "report.md").read_text()
    assert "## Speedup over iterations" in report and "r1.s0.a0" in report

    # The best candidate runs without kforge: the kernel library it imports is written beside it.
    best = kforge.tmp / "out" / "best.py"
    assert "FAST-RELU" in best.read_text() and (kforge.tmp / "out" / "kforge_kernels" / "native.py").exists()
    check = ("import importlib.util, sys, torch\n"
             f"sys.path.insert(0, {str(best.parent)!r})\n"
             f"spec = importlib.util.spec_from_file_location('best', {str(best)!r})\n"
             "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
             "x = torch.randn(64, 1000)\n"
             "assert torch.equal(m.Model()(x), torch.relu(x))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    python = ROOT / ".venv" / "bin" / "python"
    res = subprocess.run([str(python if python.exists() else sys.executable), "-I", "-c", check],
                         capture_output=True, text=True, cwd=kforge.tmp, env=env, timeout=300)
    assert res.returncode == 0, res.stderr

    text = kforge.run("report", "1")
    assert text.returncode == 0, text.stderr
    assert "r0.s0.a0" in text.stdout and "accepted" in text.stdout
    assert "## Transcript" not in text.stdout

    # --full: every prompt, reply and candidate, in order (what the README promises).
    full = kforge.run("report", "run-1", "--full")
    assert full.returncode == 0, full.stderr
    assert first_error in full.stdout  # the fix prompt that quoted the compiler error
    assert "FAST-RELU" in full.stdout  # the last candidate's source
    assert full.stdout.index("r0.s0.a0.gen") < full.stdout.index("r1.s0.a0.gen")
    doc = json.loads(kforge.run("report", "1", "--full", "--json", "-").stdout)
    assert [e["step"] for e in doc["transcript"]][0] == "r0.s0.a0.gen"
    assert "FAST-RELU" in doc["transcript"][-1]["candidate"]["source"]


def busy_loops(n: int) -> list:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def test_head_to_head_keeps_the_fast_candidate_on_a_loaded_machine(kforge):
    """Slow, then much faster, then a slower variant, with two busy loops competing for the CPU: the
    fast one stays the best, the prompts show the sizes as run and the rejected attempt."""
    log = kforge.tmp / "calls.jsonl"
    loops = busy_loops(2)
    try:
        proc = kforge.run("run", RELU, "--set", "batch_size=32", "--set", "dim=32768", "--target", "cpu",
                          "--llm", scripted(SCRIPTED / "head_to_head" / "plan.json", log), "--rounds", "4",
                          "--patience", "0", "--max-fix", "0", "--no-profile", "--out", kforge.tmp / "out", *QUICK,
                          timeout=1800)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    made = calls(log)
    assert [c["rule"] for c in made] == ["1_slow.md", "analysis.md", "2_fast.md", "analysis.md", "3_slower.md",
                                         "analysis.md", "4_no_program.md"]
    first = user_text(made[0])
    assert "batch_size = 32  # --set batch_size=32 (the file says 64)" in first
    assert "dim = 32768  # --set dim=32768 (the file says 65536)" in first
    assert "- forward input 0: float32 tensor [32, 32768]" in first
    last = user_text(made[-1])
    assert "# Round 3" in last and "not kept: r2.s0.a0 (rejected)" in last
    assert "+_lib = native.load(SRC, {\"relu\": [native.PTR, native.PTR, native.I64]}, name=\"relu_slower\"" in last
    assert "| r2.s0.a0 | rejected" in last and "| r1.s0.a0 | kept" in last  # flags may follow the verdict
    # The analysis of round 3 saw the rejected attempt and what it changed.
    assert "The latest attempt: r2.s0.a0 (rejected)" in user_text(made[5])

    summary = json.loads((kforge.tmp / "out" / "summary.json").read_text())
    assert summary["best"]["step"] == "r1.s0.a0"
    rows = {c["step"]: c for c in summary["candidates"]}
    assert rows["r1.s0.a0"]["decision"] == "accepted" and rows["r1.s0.a0"]["vs_best"]["ci_low"] > 1
    assert rows["r2.s0.a0"]["decision"] == "rejected" and rows["r2.s0.a0"]["vs_best"]["ci_high"] < 1
    report = (kforge.tmp / "out" / "report.md").read_text()
    assert "| Size overrides (`--set`) | `batch_size=32`, `dim=32768` |" in report
    assert "## Which advice paid off" in report


def test_runs_of_two_stores_keep_their_own_folders(kforge):
    """Two stores (--db) both number their first run 1; each run's candidates go beside its own store, so
    runs of different stores never evaluate each other's files."""
    for name in ("a", "b"):
        log = kforge.tmp / f"{name}.jsonl"
        proc = kforge.run("run", RELU, "--target", "cpu", "--db", kforge.tmp / name / "k.db",
                          "--llm", scripted(SCRIPTED / "relu" / "plan.json", log), "--rounds", "1", "--max-fix", "0",
                          "--no-profile", "--out", kforge.tmp / f"out-{name}", *QUICK)
        assert proc.returncode == 1, proc.stdout + proc.stderr  # the plan's first reply does not compile
        assert (kforge.tmp / name / "runs" / "1" / "candidates" / "r0.s0.a0.py").exists()
    assert not (kforge.tmp / "state" / "runs").exists()


def test_kill_9_then_resume_repeats_nothing(kforge):
    log = kforge.tmp / "calls.jsonl"
    proc = subprocess.Popen([str(kforge.binary), *map(str, relu_run_args(kforge, log))], cwd=kforge.tmp,
                            env=kforge.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Kill it once the third reply is stored, while that candidate is being evaluated.
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        try:
            with db(kforge) as con:
                if con.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0] >= 3:
                    break
        except sqlite3.OperationalError:  # not created yet
            pass
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(calls(log)) == 3
    con = db(kforge)
    assert con.execute("SELECT COUNT(*) FROM run_evaluations").fetchone()[0] == 2
    assert con.execute("SELECT status FROM runs WHERE id = 1").fetchone()[0] == "running"

    resumed = kforge.run("run", "--resume", "1")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    made = calls(log)
    # Every LLM call was made exactly once across the two processes.
    assert len(made) == 5, [c["rule"] for c in made]
    assert len({json.dumps(c["request"], sort_keys=True) for c in made}) == 5
    # Every evaluation too: one row per step, and no evaluation outside the run's steps.
    steps = [s for (s,) in con.execute("SELECT step FROM run_evaluations WHERE run_id = 1")]
    assert sorted(s for s in steps if not s.endswith(".retime")) == [
        "r0.s0.a0.eval", "r0.s0.a1.eval", "r0.s0.a2.eval", "r1.s0.a0.eval"]
    assert con.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == len(steps)
    summary = json.loads((kforge.tmp / "out" / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["best"]["step"] == "r1.s0.a0"
    assert "FAST-RELU" in (kforge.tmp / "out" / "best.py").read_text()


def test_transfer_from_cpu_to_opencl_with_format_feedback(kforge):
    log = kforge.tmp / "calls.jsonl"
    # As in a best.py that `kforge run` wrote: its header names the target it was made for (a kernel
    # kforge has evaluated is found in the store instead; src/loop/transfer_source_test.cc).
    cpu_kernel = kforge.tmp / "12_swish.py"
    cpu_kernel.write_text("# kforge target: cpu\n\n" + (ROOT / "examples" / "candidates" / "cpu" / "12_swish.py").read_text())
    proc = kforge.run("run", SWISH, "--target", "opencl", "--transfer-from", cpu_kernel,
                      "--llm", scripted(SCRIPTED / "transfer" / "plan.json", log), "--rounds", "1", "--max-fix", "1",
                      "--out", kforge.tmp / "out", *QUICK)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    made = calls(log)
    assert len(made) == 2
    first = user_text(made[0])
    assert "A working kernel for this problem from another platform" in first
    assert "`cpu` platform (`12_swish.py`)" in first
    assert cpu_kernel.read_text().strip() in first
    # A reply without a program is answered with format feedback, not a crash.
    assert "could not be used as a candidate" in user_text(made[1])
    summary = json.loads((kforge.tmp / "out" / "summary.json").read_text())
    assert summary["best"]["step"] == "r0.s0.a1"
    best = (kforge.tmp / "out" / "best.py").read_text()
    assert "vload8" in best and (kforge.tmp / "out" / "kforge_kernels" / "ocl.py").exists()


def readme_main_job() -> list:
    """The arguments of the README's main-job command (after `./build/kforge`), paths made absolute."""
    line = next(l for l in (ROOT / "README.md").read_text().splitlines() if "./build/kforge run " in l)
    args = line.split("./build/kforge ", 1)[1].split()
    absolute = lambda a: str(ROOT / a) if (ROOT / a).exists() else a
    return [f"replay:{absolute(a[7:])}" if a.startswith("replay:") else absolute(a) for a in args]


def test_main_job_replays_the_bundled_transcript_without_a_difference(kforge):
    """The README's main job, as written there (with fewer timing repetitions, which no prompt shows):
    on any machine its requests match the transcript, so no "differs from transcript" warning."""
    args = readme_main_job()
    assert args[:2] == ["run", str(SWISH)] and "--replay-by-position" in args
    transcript = Path(next(a for a in args if a.startswith("replay:"))[7:])
    proc = kforge.run(*args, "--out", kforge.tmp / "out", "--json", "-", "--eval-reps", "15", "--eval-warmup", "1",
                      "--eval-trials", "2", timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "differs from transcript" not in proc.stderr, proc.stderr
    summary = json.loads((kforge.tmp / "out" / "summary.json").read_text())
    assert json.loads(proc.stdout) == summary  # --json -: the summary alone on stdout
    assert summary["usage"]["calls"] == len(transcript.read_text().splitlines())
    assert summary["best"] is not None and summary["status"] == "finished"
    assert re.search(r"Best candidate r\d\.s0\.a\d", summary["verdict"])
    # The delivered best.py passes kforge's own checks, and its header says how it came about.
    best = kforge.tmp / "out" / "best.py"
    assert "Generated by kforge" in best.read_text() and "Verify it again with: kforge eval" in best.read_text()
    proc, result = kforge.eval(SWISH, best, "--target", "cpu", "--reps", "15", "--trials", "2")
    assert result and result["status"] == "correct", proc.stdout + proc.stderr
