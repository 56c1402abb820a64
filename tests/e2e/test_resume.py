"""`kforge run --resume` continues exactly where a run stopped. The README's main job (a replayed
transcript) is stopped after each kind of step (the hidden `--stop-after STEP`) and resumed: it must
end with the uninterrupted run's best, and every request it stored must be the uninterrupted run's
(compared by kforge's own replay keys, recorded with --record: the text without this machine's
measurements and without what depends on the secret trial inputs, both of which differ from one run
to the next). The best is what the run's stored measurements decide: a head to head the resumed run
still had to time is its own measurement, so where it decides otherwise than the uninterrupted run's,
the best follows the stored decision, never a re-timed or forgotten one. A profile the analysis prompt showed is reused on resume, not taken again, so
the resumed request is byte-identical to the one the stopped run would have sent. Ctrl-C stops a run
within 2 s, abandoning the evaluation in flight, which the resumed run does again."""

import json
import signal
import sqlite3
import subprocess
import time

import pytest

from e2e_support import Kforge
from test_run import readme_main_job

# Fewer timing repetitions than the README's (no prompt shows them).
QUICK = ["--eval-reps", "15", "--eval-warmup", "1", "--eval-trials", "2"]


def main_job(kforge, *extra):
    return kforge.run(*readme_main_job(), "--out", kforge.tmp / "out", *QUICK, *extra, timeout=1800)


def replay_keys(transcript) -> list:
    """The replay key kforge computed for each call it recorded (--record), in order."""
    return [json.loads(line)["key"] for line in transcript.read_text().splitlines() if line.strip()]


def accepted(kforge) -> list:
    """Run 1's stored accepted decisions, in order: (step, what was measured)."""
    with store(kforge) as con:
        return [(s, json.loads(d)) for s, d in con.execute(
            "SELECT step, detail_json FROM decisions WHERE run_id = 1 AND kind = 'accepted' ORDER BY id")]


def decisions(kforge) -> list:
    with store(kforge) as con:
        return con.execute("SELECT step, kind, detail_json FROM decisions WHERE run_id = 1 ORDER BY id").fetchall()


def assert_best_is_the_stored_decision(kforge):
    """summary.json's best is the last accepted candidate, with the measurement stored for it."""
    step, detail = accepted(kforge)[-1]
    best = summary(kforge)["best"]
    assert best["step"] == step
    shared = set(best) & set(detail) - {"timing_spread"}  # the summary shows the candidate's alone
    assert {"eval_step", "median_ms", "vs_eager", "vs_compile"} <= shared, (best, detail)
    assert {k: best[k] for k in shared} == {k: detail[k] for k in shared}


def store(kforge) -> sqlite3.Connection:
    return sqlite3.connect(kforge.tmp / "state" / "kforge.db")


def requests(kforge) -> dict:
    """Each stored call's request: step -> (what a replay matches on, the full text)."""
    out = {}
    with store(kforge) as con:
        for step, request in con.execute("SELECT step, request_json FROM llm_calls WHERE run_id = 1 ORDER BY id"):
            messages = json.loads(request)["messages"]
            text = lambda m: "".join(p.get("text", "") for p in m["content"])
            out[step] = ([m.get("match_text") or text(m) for m in messages], [text(m) for m in messages])
    return out


def step_names(kforge) -> list:
    """Every stored step of run 1, in the order it was stored, with its kind."""
    with store(kforge) as con:
        calls = [(i, s, "analyze" if s.endswith(".analyze") else "gen")
                 for i, s in con.execute("SELECT id, step FROM llm_calls WHERE run_id = 1")]
        evals = [(i, s, "eval") for i, s in con.execute("SELECT rowid, step FROM run_evaluations WHERE run_id = 1")]
        decisions = [(s, k) for s, k in con.execute("SELECT step, kind FROM decisions WHERE run_id = 1 ORDER BY id")]
    steps = [(s, kind) for _, s, kind in sorted(calls) + sorted(evals)]
    steps += [(s, "profile") for s, k in decisions if k == "profile"]
    steps += [(s + ".keep", "keep") for s, k in decisions if k in ("rejected", "undecided") or
              (k == "accepted" and not s.startswith("r0."))]
    return steps


def summary(kforge) -> dict:
    return json.loads((kforge.tmp / "out" / "summary.json").read_text())


@pytest.fixture(scope="module")
def uninterrupted(kforge_bin, tmp_path_factory):
    k = Kforge(kforge_bin, tmp_path_factory.mktemp("uninterrupted"))
    proc = main_job(k, "--record", k.tmp / "calls.jsonl")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "differs from transcript" not in proc.stderr, proc.stderr
    assert_best_is_the_stored_decision(k)
    return {"requests": requests(k), "keys": replay_keys(k.tmp / "calls.jsonl"), "steps": step_names(k)}


def last_of_kind(steps: list, kind: str) -> str:
    # The last step of its kind: what the resumed run must still do depends on all before it.
    found = [s for s, k in steps if k == kind]
    assert found, f"the main job has no {kind} step: {steps}"
    return found[-1]


@pytest.mark.parametrize("kind", ["gen", "eval", "profile", "analyze", "keep"])
def test_stopped_after_each_step_kind_the_resumed_run_matches_the_uninterrupted_one(kforge, uninterrupted, kind):
    step = last_of_kind(uninterrupted["steps"], kind)
    stopped = main_job(kforge, "--stop-after", step, "--record", kforge.tmp / "stopped.jsonl")
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert f"stopped after {step}" in stopped.stderr and "resume with: kforge run --resume 1" in stopped.stderr
    before = requests(kforge)
    decided_before = decisions(kforge)
    with store(kforge) as con:
        profiles = {s: json.loads(d) for s, d in con.execute(
            "SELECT step, detail_json FROM decisions WHERE run_id = 1 AND kind = 'profile'")}

    resumed = kforge.run("run", "--resume", "1", "--record", kforge.tmp / "resumed.jsonl", timeout=1800)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "differs from transcript" not in stopped.stderr + resumed.stderr, stopped.stderr + resumed.stderr
    after = requests(kforge)
    assert list(after) == list(uninterrupted["requests"])
    # Every request, those sent before the stop and those the resumed run built (the stored ones again,
    # answered from the store, then the new ones), has the uninterrupted run's replay key.
    keys = uninterrupted["keys"]
    assert replay_keys(kforge.tmp / "stopped.jsonl") == keys[:len(before)]
    assert replay_keys(kforge.tmp / "resumed.jsonl") == keys
    # What was stored before the stop stays as it was, requests and decisions alike.
    assert {n: after[n] for n in before} == before
    assert decisions(kforge)[:len(decided_before)] == decided_before
    # The best: what the stored measurements decide (a head to head the resumed run still had to
    # time is its own measurement, so it may decide otherwise than the uninterrupted run's did).
    assert_best_is_the_stored_decision(kforge)
    # A profile stored before the stop is what the resumed analysis request shows, byte for byte.
    for profile_step, detail in profiles.items():
        analyze = profile_step.replace(".profile", ".analyze")
        if "summary" in detail and analyze not in before:
            assert detail["summary"] in after[analyze][1][1], analyze


def test_ctrl_c_stops_within_two_seconds_and_the_evaluation_is_redone_on_resume(kforge):
    args = [*readme_main_job(), "--out", kforge.tmp / "out", *QUICK]
    proc = subprocess.Popen([str(kforge.binary), *map(str, args)], cwd=kforge.tmp, env=kforge.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Interrupt once the first reply is stored, while its candidate is being evaluated.
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        try:
            with store(kforge) as con:
                if con.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0] >= 1:
                    break
        except sqlite3.OperationalError:  # not created yet
            pass
        time.sleep(0.05)
    time.sleep(0.5)  # well inside the evaluation (it takes seconds)
    with store(kforge) as con:
        assert con.execute("SELECT COUNT(*) FROM run_evaluations").fetchone()[0] == 0
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert proc.returncode == 1, stderr
    assert took <= 2.0, f"Ctrl-C took {took:.1f} s to stop the run"
    assert "interrupted" in stderr
    with store(kforge) as con:  # the abandoned evaluation left no verdict
        assert con.execute("SELECT COUNT(*) FROM run_evaluations").fetchone()[0] == 0
        assert con.execute("SELECT status FROM runs WHERE id = 1").fetchone()[0] == "interrupted"

    resumed = kforge.run("run", "--resume", "1", timeout=1800)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    with store(kforge) as con:
        status = con.execute("SELECT e.status FROM run_evaluations r JOIN evaluations e ON e.id = r.evaluation_id "
                             "WHERE r.run_id = 1 AND r.step = 'r0.s0.a0.eval'").fetchone()
    assert status is not None and status[0] in ("correct", "incorrect", "compile_error", "runtime_error")
    assert summary(kforge)["status"] == "finished"
