"""Attacks by a candidate that has read kforge's source (tests/adversarial/forged/): it predicts its
inputs, forges its times and its replies, does its work where the recorder cannot see it, or behaves
only while watched. Each is stopped with the check that names it (docs/checks.md, docs/isolation.md).

Most spell their names at run time (`getattr(x, "a" + "b")`, `__import__("o" + "s")`), which
`static.dynamic_code` now rejects on its own; each test also asserts the runtime or harness check that
stops the attack where the static checks would not.
"""

import json

import pytest

from adversarial_support import HERE, problem
from e2e_support import stray_processes

FORGED = HERE / "forged"
QUICK = ["--no-compile-baseline", "--reps", "10", "--warmup", "1", "--seed", "7"]
# The clock floor rejects only where most judged blocks are far below it, three at least (a stall
# catches a block of an honest candidate, a forged timer most of them): the default 30 repetitions.
TIMED = {"patched_session_timer", "inflated_untimed", "halved_timer"}

# attack -> (problem, status, the check that must fail (runtime or harness), the static check that must fail)
ATTACKS = {
    # Inputs drawn from a secret: the replayed seeds give other inputs, the lookup misses.
    "predicted_inputs": ("relu", "incorrect", "mismatch", None),
    # Torch work on a thread started at import, or under switched-off dispatch modes.
    "thread_at_import": ("softmax", "rejected", "concurrency", "static.dynamic_code"),
    "disabled_modes": ("softmax", "rejected", "introspection", "static.dynamic_code"),
    "disabled_modes_plain": ("softmax", "rejected", "introspection", "static.introspection"),
    # Replies on the reply channel that are not the worker's reply to the pending request.
    "forged_time_reply": ("relu", "rejected", "protocol", "static.dynamic_code"),
    "forged_string_times": ("relu", "rejected", "protocol", "static.dynamic_code"),
    "timer_strings": ("relu", "rejected", "protocol", "static.dynamic_code"),
    "noise_on_reply_channel": ("relu", "rejected", "protocol", "static.dynamic_code"),
    # Fast times claimed for a slow kernel, with the timer replaced in the worker's session (its
    # kernel time booked as untimed work; or every time halved): kforge's clock floor rejects them
    # (src/eval/clock_floor.h), beside static.dynamic_code.
    "patched_session_timer": ("relu", "rejected", "timing_crosscheck", "static.dynamic_code"),
    "inflated_untimed": ("relu", "rejected", "timing_crosscheck", "static.dynamic_code"),
    "halved_timer": ("relu", "rejected", "timing_crosscheck", "static.dynamic_code"),
    # What only the static checks can see: code built from strings, frames read plainly, and a branch
    # that never runs under kforge.
    "exec_delegation": ("softmax", "rejected", "torch_delegation", "static.dynamic_code"),
    "traceback_frames_plain": ("relu", "rejected", None, "static.introspection"),
    "sandbox_aware": ("relu", "rejected", None, "static.environment_probe"),
}


def _failed(result, name):
    return any(c["name"] == name and c["verdict"] == "fail" for c in result["checks"])


def _summary(result):
    return {k: result.get(k) for k in ("status", "error", "checks")}


def test_there_are_a_dozen_attacks():
    assert len(ATTACKS) >= 12
    assert {p.stem for p in FORGED.glob("*.py")} == set(ATTACKS)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_forged_verdict_is_stopped(kforge, name):
    prob, status, check, static = ATTACKS[name]
    flags = [f for f in QUICK if f not in ("--reps", "10")] if name in TIMED else QUICK
    proc, result = kforge.eval(problem(prob), FORGED / f"{name}.py", *flags)
    assert result is not None, proc.stdout + proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])  # never an internal error (3)
    assert result["status"] == status, _summary(result)
    if check == "mismatch":
        assert result["error"]["kind"] == "mismatch", _summary(result)
    elif check is not None:
        assert _failed(result, check), _summary(result)
        assert result["error"]["kind"] == check, _summary(result)
    if static is not None:
        assert _failed(result, static), _summary(result)
    assert stray_processes(str(kforge.tmp)) == []  # the candidate's process and its sandbox are gone


def test_a_malformed_reply_rejects_one_candidate_and_the_next_is_evaluated(kforge):
    out = kforge.tmp / "several.json"
    honest = HERE / "honest" / "relu_native.py"
    proc = kforge.run("eval", problem("relu"), FORGED / "timer_strings.py", honest, "--json", out, *QUICK)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    first, second = json.loads(out.read_text())["evaluations"]
    assert first["status"] == "rejected" and first["error"]["kind"] == "protocol", _summary(first)
    assert "times_ms" in first["error"]["message"], first["error"]
    assert second["status"] == "correct", _summary(second)


def _busy_loops(count: int):
    """CPU-bound processes competing with the evaluation (each a plain `while True` in Python)."""
    import subprocess
    import sys
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def _judged(result):
    return [b for b in result["timing"]["crosscheck"]
            if "reject_floor_ms" in b and not b.get("warmup") and not b.get("too_short_to_judge")]


def test_an_honest_candidate_under_two_busy_loops_passes_the_clock_floor(kforge):
    """The halved_timer kernel with kforge's own timer, on a machine kept busy by two CPU loops: no
    judged block is far below its floor (an honest block hides only the request's own cost; the
    forged one hides half of its repetitions)."""
    loops = _busy_loops(2)
    try:
        proc, result = kforge.eval(problem("relu"), HERE / "honest" / "relu_repeated_native.py",
                                   *[f for f in QUICK if f not in ("--reps", "10")])
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "correct", _summary(result)
    assert not _failed(result, "timing_crosscheck"), _summary(result)
    judged = _judged(result)
    assert len(judged) >= 3, result["timing"]["crosscheck"]  # the floor did judge it: blocks long enough
    assert not any(b.get("far_below_floor") for b in judged), judged


def test_a_halved_timer_hides_more_than_the_rejection_share(kforge):
    """The gap the two tests above rest on: the forged blocks leave 40% of kforge's clock and more
    unaccounted for, where the rejection floor allows a quarter and the allowance (clock_floor.h)."""
    proc, result = kforge.eval(problem("relu"), FORGED / "halved_timer.py",
                               *[f for f in QUICK if f not in ("--reps", "10")])
    assert result is not None, proc.stdout + proc.stderr
    assert result["error"]["kind"] == "timing_crosscheck", _summary(result)
    judged = _judged(result)
    assert len(judged) >= 3, result["timing"]["crosscheck"]
    for b in judged:
        clock = b["wall_ms"] - b.get("round_trip_ms", 0)
        assert clock - b["explained_ms"] >= 0.4 * clock, b
        assert b.get("far_below_floor"), b
