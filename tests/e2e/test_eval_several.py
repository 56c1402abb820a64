"""`kforge eval PROBLEM C1 C2 ...`: candidates evaluated in turn with a kept reference process and
candidate processes started ahead, none of which ever serves two candidates."""

import json

from e2e_support import candidate, problem

QUICK = ["--no-compile-baseline", "--reps", "5", "--warmup", "1"]
TINY = problem("tiny_add")


def test_several_candidates_share_the_reference_but_no_candidate_process(kforge):
    out = kforge.tmp / "several.json"
    names = ["leaves_traces", "finds_no_traces", "wrong_values"]
    proc = kforge.run("eval", TINY, *[candidate(n) for n in names], "--json", out, *QUICK)
    # The worst of the three decides the exit code: all are the candidates' faults.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    evaluations = json.loads(out.read_text())["evaluations"]
    # leaves_traces is rejected by the static checks but still runs (sandboxed), so it leaves its
    # traces; finds_no_traces fails at import if its process has any.
    assert [e["status"] for e in evaluations] == ["rejected", "correct", "incorrect"], [
        e.get("error") for e in evaluations]
    assert [e["candidate"].rsplit("/", 1)[1] for e in evaluations] == [f"{n}.py" for n in names]
    workers = [e["env"]["workers"] for e in evaluations]
    assert workers[0]["reference"]["origin"] == "started"
    assert [w["reference"]["origin"] for w in workers[1:]] == ["kept from an earlier evaluation"] * 2
    assert [w["reference"]["evaluation"] for w in workers] == [1, 2, 3]
    assert [w["candidate"]["origin"] for w in workers[1:]] == ["started ahead"] * 2
    # The kept reference calibrated the problem once, with the first evaluation's seed.
    assert [e["calibration"].get("reused", False) for e in evaluations] == [False, True, True]
    assert {e["calibration"]["calibrated_with_seed"] for e in evaluations} == {evaluations[0]["seed"]}
    assert proc.stdout.count("== ") == 3 and "== 2/3:" in proc.stdout
    # Each evaluation is stored, with its own log directory.
    assert len({e["store"]["evaluation_id"] for e in evaluations}) == 3
    assert len({e["env"]["log_dir"] for e in evaluations}) == 3


def test_every_candidate_is_checked_before_the_first_evaluation(kforge):
    missing = kforge.tmp / "missing.py"
    proc = kforge.run("eval", TINY, candidate("correct"), missing, *QUICK)
    assert proc.returncode == 2
    assert f"candidate file not found: {missing}" in proc.stderr
    assert "status:" not in proc.stdout
