"""`kforge bench` end to end on the cpu target: bundled candidates (--candidates), a scripted model
driving `kforge run` (--llm exec:), kill -9 and --resume, reports in all three formats, and the
HTML report opened in headless Chromium. Three small problems keep each bench to seconds."""

import fcntl
import html as html_lib
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from e2e_support import ROOT, HERE, Kforge, cpu_candidates_without

PROBLEMS = ROOT / "examples" / "problems"
# 13_channel_norm is left without a cpu candidate: the bench must count it as a failure.
CPU_CANDIDATES = cpu_candidates_without("13_channel_norm")
SUITE = ["01_relu", "12_swish", "13_channel_norm"]
# Quick evaluations at a quarter of the problems' batch size; big enough that a busy machine's stalls
# do not dwarf the kernels' times.
QUICK = ["--no-compile-baseline", "--eval-reps", "5", "--eval-warmup", "1", "--eval-trials", "2", "--seed", "7",
         "--set", "batch_size=16"]


def write_suite(tmp: Path, names=SUITE) -> Path:
    suite = tmp / "suite.txt"
    suite.write_text("# bench test suite\n" + "".join(f"{PROBLEMS / n}.py\n" for n in names))
    return suite


def db(k: Kforge) -> sqlite3.Connection:
    return sqlite3.connect(k.tmp / "state" / "kforge.db")


def bench_id(output: str) -> int:
    m = re.search(r"bench (\d+)", output)
    assert m, output
    return int(m.group(1))


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


@pytest.fixture(scope="module")
def candidates_bench(kforge_bin, tmp_path_factory):
    """One --candidates bench shared by the tests that read its results, also across pytest-xdist
    workers (the first one to get the lock runs it). With --jobs 2 on the CPU each problem is
    checked in parallel, then timed alone."""
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's base is a folder of this run's base; without it, the run's base.
    shared = (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "candidates-bench"
    shared.mkdir(exist_ok=True)
    k = Kforge(kforge_bin, shared)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "result.json").exists():
            proc = k.run("bench", write_suite(k.tmp), "--target", "cpu", "--candidates", CPU_CANDIDATES, "--jobs",
                         "2", "--out", k.tmp / "out", *QUICK)
            (shared / "result.json").write_text(json.dumps([proc.returncode, proc.stdout, proc.stderr]))
    returncode, stdout, stderr = json.loads((shared / "result.json").read_text())
    return k, subprocess.CompletedProcess([], returncode, stdout, stderr)


def test_candidates_bench_metrics(candidates_bench):
    k, proc = candidates_bench
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((k.tmp / "out" / "report.json").read_text())
    problems = {p["name"]: p for p in report["problems"]}
    assert list(problems) == SUITE
    assert problems["13_channel_norm"]["status"] == "no_candidate"
    assert problems["13_channel_norm"]["correct"] is False
    for name in ["01_relu", "12_swish"]:
        assert problems[name]["status"] == "correct", problems[name]
        assert problems[name]["candidate"] == str(CPU_CANDIDATES / f"{name}.py")

    m = report["metrics"]
    assert (m["problems"], m["correct"], m["done"]) == (3, 2, 3)
    assert m["correctness_rate"] == pytest.approx(2 / 3)
    assert m["precision"] == "strict"
    # The metrics agree with the per-problem speedups they summarise.
    speedups = [problems[n]["speedup_vs_eager"] for n in ["01_relu", "12_swish"]]
    assert m["fast_p"]["eager"]["0"] == pytest.approx(2 / 3)
    assert m["fast_p"]["eager"]["1"] == pytest.approx(sum(s > 1 for s in speedups) / 3)
    assert m["geomean_speedup"]["eager"]["all_problems"] == pytest.approx(geomean(speedups + [1.0]))
    assert m["geomean_speedup"]["eager"]["correct_only"] == pytest.approx(geomean(speedups))
    assert m["baselines_measured"]["compile"] is False  # --no-compile-baseline
    assert report["bench"]["wall_seconds"] > 0

    # Each problem's speedup is that of its stored timed evaluation, which followed an untimed check.
    con = db(k)
    rows = con.execute("SELECT b.name, e.result_json, c.result_json FROM bench_problems b "
                       "JOIN evaluations e ON e.id = b.evaluation_id "
                       "JOIN evaluations c ON c.id = b.check_evaluation_id").fetchall()
    assert {name: json.loads(r)["speedup_vs_eager"] for name, r, _ in rows} == dict(zip(["01_relu", "12_swish"], speedups))
    for _, timed, check in rows:
        assert json.loads(check)["status"] == "correct" and "candidate" not in json.loads(check).get("timing", {})
        assert json.loads(timed)["timing"]["candidate"]["reps"] == 5
    assert con.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 4  # a check and a timing each


def test_reports_in_three_formats(candidates_bench):
    k, proc = candidates_bench
    bid = bench_id(proc.stdout)
    md = (k.tmp / "out" / "report.md").read_text()
    assert "| fast_1 (correct and > 1x faster, share of all problems) |" in md
    assert "| 13_channel_norm | no_candidate |" in md
    again = k.run("report", f"bench-{bid}", "--format", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads((k.tmp / "out" / "report.json").read_text())
    assert k.run("report", f"bench-{bid}", "--format", "md").stdout == md
    html = k.tmp / "again.html"
    assert k.run("report", f"bench-{bid}", "--format", "html", "--out", html).returncode == 0
    assert html.read_text() == (k.tmp / "out" / "report.html").read_text()


def chromium() -> str:
    return shutil.which("chromium") or shutil.which("chromium-browser") or ""


def headless_chromium(html: Path, profile: Path, *extra) -> subprocess.CompletedProcess:
    # --virtual-time-budget lets the page's scripts run to the end before the DOM is read or the
    # screenshot taken; animation is off, so every chart is drawn by then.
    return subprocess.run([chromium(), "--headless=new", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr",
                           "--v=0", f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--hide-scrollbars",
                           *extra, html.as_uri()], capture_output=True, text=True, timeout=120)


def test_html_report_renders_every_chart_in_chromium(candidates_bench):
    if not chromium():
        pytest.skip("chromium is not installed (Debian package chromium; scripts/setup.sh installs it)")
    k, _ = candidates_bench
    html = k.tmp / "out" / "report.html"
    report = json.loads((k.tmp / "out" / "report.json").read_text())
    proc = headless_chromium(html, k.tmp / "chromium", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-3000:]
    dom = proc.stdout
    # Each chart laid out what the data holds (the page writes what Chart.js drew).
    problems = report["problems"]
    n = len(problems)
    correct = sum(1 for p in problems if p["correct"])
    # Faster by the one speed-claim rule (every baseline's interval above 1), not by the point estimate.
    faster = sum(1 for p in problems if p["correct"] and p["speed_verdict"] == "faster")
    figures = dict(re.findall(r'<figure id="(chart-[a-z]+)" data-points-per-series="([^"]*)"', dom))
    # A --candidates bench has no rounds: no round chart.
    assert set(figures) == {"chart-fastp", "chart-speedups", "chart-sol"}, dom[:2000]
    # One series (eager: torch.compile was not measured; none without a correct problem): fast_0, then
    # a point per correct problem.
    assert json.loads(figures["chart-fastp"]) == ([correct + 1] if correct else [])
    # Bars faster / not faster, a cross per failed problem, the 1x line across all.
    assert json.loads(figures["chart-speedups"]) == [faster, correct - faster, n - correct, n]
    with_sol = sum(1 for p in problems if p["correct"] and p.get("sol_pct") is not None)
    assert sum(json.loads(figures["chart-sol"])) == with_sol
    assert 'data-charts-drawn="3"' in dom
    # Speedups on log axes; each legend swatch in the colour of what it names, one meaning per colour.
    drawn = {}
    for m in re.finditer(r'<figure id="(chart-[a-z]+)"[^>]*>', dom):
        attributes = re.findall(r'data-([a-z-]+)="([^"]*)"', m.group(0))
        drawn[m.group(1)] = {k: json.loads(html_lib.unescape(v)) for k, v in attributes}
    assert drawn["chart-speedups"]["axes"]["y"] == "logarithmic"
    assert drawn["chart-fastp"]["axes"]["x"] == "logarithmic"
    assert dict(drawn["chart-speedups"]["legend"]) == {
        "faster than PyTorch": "#2ca02c", "correct, not faster": "#7f7f7f", "no correct candidate": "#d62728",
        "1x (as fast as PyTorch)": "#444444"}
    assert dict(drawn["chart-fastp"]["legend"]) == {"vs eager PyTorch": "#1f77b4"}
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    assert not console, "\n".join(console)

    # A screenshot of the whole report, kept with the test's files for people to look at; the
    # page must have painted something other than a blank page.
    png = k.tmp / "report.png"
    shot = headless_chromium(html, k.tmp / "chromium", f"--screenshot={png}", "--window-size=1200,2600")
    assert shot.returncode == 0 and png.exists(), shot.stderr[-3000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def scripted_model(log: Path) -> str:
    return f"exec:{sys.executable} {HERE / 'scripted' / 'bench_model.py'} {CPU_CANDIDATES} {log}"


def test_llm_bench_drives_the_loop_with_a_scripted_model(kforge):
    log = kforge.tmp / "calls.jsonl"
    model = scripted_model(log)
    proc = kforge.run("bench", write_suite(kforge.tmp), "--target", "cpu", "--llm", model, "--rounds", "1",
                      "--max-fix", "0", "--out", kforge.tmp / "out", *QUICK)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((kforge.tmp / "out" / "report.json").read_text())
    problems = {p["name"]: p for p in report["problems"]}
    assert [problems[n]["correct"] for n in SUITE] == [True, True, False]
    assert problems["13_channel_norm"]["status"] == "no_correct_candidate"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(c["problem"] for c in calls) == sorted(SUITE)  # one generation call per problem

    con = db(kforge)
    runs = con.execute("SELECT b.name, r.status, r.options_json FROM bench_problems b JOIN runs r ON r.id = b.run_id "
                       "ORDER BY b.position").fetchall()
    assert [(name, status) for name, status, _ in runs] == [(n, "finished") for n in SUITE]
    assert all(json.loads(o)["rounds"] == 1 for _, _, o in runs)
    assert (kforge.tmp / "out" / "problems" / "01_relu" / "best.py").exists()

    llm = report["metrics"]["llm"]
    tokens = con.execute("SELECT SUM(input_tokens + output_tokens), COUNT(*) FROM llm_calls").fetchone()
    assert (llm["input_tokens"] + llm["output_tokens"], llm["calls"]) == tokens
    assert llm["tokens_per_solved"] == pytest.approx(tokens[0] / 2)
    assert report["bench"]["llm"] == model

    # The HTML report of a model-driven bench also charts the rounds: a line per problem, a point per
    # round with a correct candidate (the problem without one has none).
    if chromium():
        dom = headless_chromium(kforge.tmp / "out" / "report.html", kforge.tmp / "chromium", "--dump-dom").stdout
        figures = dict(re.findall(r'<figure id="(chart-[a-z]+)" data-points-per-series="([^"]*)"', dom))
        assert json.loads(figures["chart-iterations"]) == [1, 1, 0], dom[:2000]
        assert 'data-charts-drawn="4"' in dom


def wait_for(predicate, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def kill_after_first_problem(kforge, args):
    """Runs `kforge ARGS` (a bench) and kills it with SIGKILL once its first problem is done."""
    proc = subprocess.Popen([str(kforge.binary), *map(str, args)], env=kforge.env, cwd=kforge.tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = lambda: db(kforge).execute("SELECT COUNT(*) FROM bench_problems WHERE status = 'done'").fetchone()[0]
    try:
        assert wait_for(lambda: (kforge.tmp / "state" / "kforge.db").exists() and done() >= 1, 120)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def test_killed_bench_resumes_without_losing_or_repeating(kforge):
    args = ["bench", write_suite(kforge.tmp), "--target", "cpu", "--candidates", CPU_CANDIDATES,
            "--out", kforge.tmp / "out", *QUICK]
    # 13_channel_norm (no candidate) sorts last, so one done means 01_relu is finished and 12_swish is next.
    kill_after_first_problem(kforge, args)
    con = db(kforge)
    before = dict(con.execute("SELECT name, evaluation_id FROM bench_problems WHERE status = 'done'").fetchall())
    assert 1 <= len(before) < 3
    assert con.execute("SELECT status FROM benches").fetchone()[0] == "running"  # killed, not ended

    resumed = kforge.run("bench", "--resume", "1")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"({len(before)} done)" in resumed.stderr
    con = db(kforge)
    after = dict(con.execute("SELECT name, evaluation_id FROM bench_problems").fetchall())
    assert {n: after[n] for n in before} == before  # finished problems were not redone
    # Exactly one evaluation per candidate: nothing repeated, nothing lost.
    assert con.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 2
    assert con.execute("SELECT status FROM benches").fetchone()[0] == "finished"
    report = json.loads((kforge.tmp / "out" / "report.json").read_text())
    assert report["metrics"]["done"] == 3 and report["metrics"]["correct"] == 2
    # The report keeps the command the bench was started with (its settings), and names the resume.
    env = report["bench"]["environment"]
    assert env["command_line"][1:] == [str(a) for a in args], env
    assert env["resumed_with"][0][1:] == ["bench", "--resume", "1"], env
    assert "--candidates" in (kforge.tmp / "out" / "report.md").read_text()


def test_killed_llm_bench_resumes_each_run_where_it_stopped(kforge):
    log = kforge.tmp / "calls.jsonl"
    args = ["bench", write_suite(kforge.tmp), "--target", "cpu", "--llm", scripted_model(log), "--rounds", "1",
            "--max-fix", "0", "--out", kforge.tmp / "out", *QUICK]
    kill_after_first_problem(kforge, args)
    con = db(kforge)
    finished = [n for (n,) in con.execute("SELECT name FROM bench_problems WHERE status = 'done'")]
    runs_before = dict(con.execute("SELECT name, run_id FROM bench_problems WHERE run_id IS NOT NULL").fetchall())
    assert 1 <= len(finished) < 3

    resumed = kforge.run("bench", "--resume", "1")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    con = db(kforge)
    runs_after = dict(con.execute("SELECT name, run_id FROM bench_problems").fetchall())
    assert {n: runs_after[n] for n in runs_before} == runs_before  # a started run is resumed, not replaced
    assert con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 3
    assert {s for (s,) in con.execute("SELECT status FROM runs")} == {"finished"}
    # A problem finished before the kill asked the model nothing more.
    calls = [json.loads(line)["problem"] for line in log.read_text().splitlines()]
    for name in finished:
        assert calls.count(name) == 1, calls


@pytest.mark.parametrize("args, message", [
    (["bench", "/nonexistent/suite", "--candidates", "."], "suite not found"),
    (["bench", str(PROBLEMS), "--target", "cpu"], "give either --llm"),
    (["bench", str(PROBLEMS), "--candidates", "/nonexistent"], "--candidates: not a directory"),
    (["bench", str(PROBLEMS), "--candidates", ".", "--device", "gpu0"], "is not a device"),
    (["bench", "--resume", "9"], "no bench 9"),
    (["report", "bench-9"], "no bench 9"),
    (["report", "bench-x"], "neither a run"),
])
def test_bad_input_is_a_usage_error(kforge, args, message):
    proc = kforge.run(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr


def test_a_finished_problem_releases_its_reference_worker(kforge):
    """A bench keeps no reference process for a finished problem: over five problems at most two are
    alive at once (the one in use and one being shut down), not one per finished problem."""
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_memory

    problems, candidates = bench_memory.generate_suite(kforge.tmp, 5)
    proc = subprocess.Popen([str(kforge.binary), "bench", str(problems), "--target", "cpu", "--candidates",
                             str(candidates), "--jobs", "1", "--out", str(kforge.tmp / "out"), "--no-compile-baseline",
                             "--eval-trials", "1", "--eval-reps", "1", "--eval-warmup", "0"],
                            env=kforge.env, cwd=kforge.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    most = 0
    while proc.poll() is None:
        alive = 0
        for pid in bench_memory.tree(proc.pid):
            try:
                alive += b"--role\x00reference" in Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                pass
        most = max(most, alive)
        time.sleep(0.05)
    output = proc.stdout.read()
    assert proc.returncode == 0, output
    assert "5 of 5 problems correct" in output, output
    assert 1 <= most <= 2, f"{most} reference workers alive at once"
