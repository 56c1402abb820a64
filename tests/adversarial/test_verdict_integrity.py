"""Verdicts hold against candidates that know how they are measured (docs/checks.md):

* timed repetitions prove their outputs: inputs change between repetitions, and kforge picks the
  repetitions it checks only after they ran, so a candidate that detects the timing phase (by the
  buffers it is handed, by reading the harness's frames; the clock works too, less reliably) and
  cheats only there is rejected;
* the static checks survive any source (limits, a disposable process, a linear tokeniser), and a
  pathological candidate is rejected without costing the next one its evaluation;
* speed of light is a physical bound: exact algebraic rewrites and exact answers to degenerate
  problems are accepted, each with its `speed_class`, while caches stay rejected.
"""

import json
import sys

import pytest

from adversarial_support import CHEAT_SIZES, HERE, problem

# The default 30 repetitions (6 blocks of 5): enough picked repetitions that a candidate cheating on
# most timed calls is caught every time.
TIMED_RUN = ["--no-compile-baseline", "--warmup", "1", "--seed", "7"]
def quick(reps: int = 10) -> list:
    return ["--no-compile-baseline", "--reps", str(reps), "--warmup", "1", "--seed", "7"]


QUICK = quick()

# candidate -> (problem, the check that must fail)
TIMING_AWARE = {
    "timed_replay": ("relu", "timed_output"),    # repeated buffers get the previous call's output
    "timed_stack": ("relu", "timed_output"),     # reads the timing loop's locals, computes only the last rep
    "timed_lazy": ("relu", "output_type"),       # repeated buffers get a tensor computed when first read
    "timed_mutate": ("relu", "input_mutation"),  # zeroes repeated buffers to recognise a repetition
    "timed_alias": ("relu", "input_mutation"),   # works in place on repeated buffers
}


def _failed(result, name):
    return any(c["name"] == name and c["verdict"] == "fail" for c in result["checks"])


def _summary(result):
    return {k: result.get(k) for k in ("status", "error", "checks")}


@pytest.mark.parametrize("name", sorted(TIMING_AWARE))
def test_a_candidate_that_cheats_only_while_timed_is_rejected(kforge, name):
    prob, check = TIMING_AWARE[name]
    proc, result = kforge.eval(problem(prob), HERE / "cheats" / f"{name}.py", *TIMED_RUN)
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected", _summary(result)
    assert result["error"]["kind"] == check and _failed(result, check), _summary(result)
    assert "timed" in result["error"]["message"], result["error"]
    assert proc.returncode == 1
    # Its correctness trials all passed: only the timed calls give it away.
    assert result["correctness"]["trials_passed"] == result["correctness"]["trials"] > 0


def test_timed_outputs_of_an_honest_kernel_are_checked_at_random(kforge):
    proc, result = kforge.eval(problem("relu"), HERE / "honest" / "relu_own_buffer.py", *TIMED_RUN)
    assert result["status"] == "correct", _summary(result)
    check = next(c for c in result["checks"] if c["name"] == "timed_output")
    assert check["verdict"] == "pass", check
    proof = result["timing"]["timed_output"]
    assert proof["input_sets"] >= 2 and proof["repetitions_checked"] >= 2 * 6
    assert proof["repetitions_checked"] < proof["repetitions"]


# --- robust static checks ---------------------------------------------------------------------------

RELU = (HERE / "honest" / "relu_native.py").read_text()


def _padded(tmp_path, name, before, padding):
    """The honest ReLU with `padding` inserted before `before` in its source."""
    path = tmp_path / f"{name}.py"
    assert before in RELU
    path.write_text(RELU.replace(before, padding + before, 1))
    return path


def _rejected_by_static_limits(proc, result):
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected", _summary(result)
    assert result["error"]["kind"] == "static_limits" and _failed(result, "static_limits"), _summary(result)
    assert proc.returncode == 1
    assert result["correctness"]["trials"] == 0  # never ran: the source alone decided


def test_nesting_past_the_parser_is_rejected_not_blamed_on_the_problem(kforge):
    proc, result = kforge.eval(problem("relu"), HERE / "cheats" / "static_nesting.py", *QUICK)
    _rejected_by_static_limits(proc, result)
    assert "nested too deeply" in result["error"]["message"]


def test_a_source_beyond_256_kib_is_rejected(kforge, tmp_path):
    huge = _padded(tmp_path, "static_huge", "class ModelNew", "# " + "padding " * 40_000 + "\n")
    proc, result = kforge.eval(problem("relu"), huge, *QUICK)
    _rejected_by_static_limits(proc, result)
    assert "256 KiB" in result["error"]["message"]


def test_text_that_was_quadratic_for_the_tokeniser_is_checked_in_time(kforge, tmp_path):
    # 180 KB of blank lines inside the C++ source took the old tokeniser about 40 s (810 KB: past
    # 600 s); under 256 KiB, it is checked like any other source and the kernel is judged on its merits.
    slow = _padded(tmp_path, "static_blank_lines", "extern", "\n \n" * 60_000)
    proc, result = kforge.eval(problem("relu"), slow, *QUICK)
    assert result["status"] == "correct", _summary(result)
    assert result["phases_s"]["screen_candidate"] < 30


def test_the_next_candidate_is_evaluated_after_a_pathological_one(kforge):
    out = kforge.tmp / "several.json"
    proc = kforge.run("eval", problem("relu"), HERE / "cheats" / "static_nesting.py",
                      HERE / "honest" / "relu_native.py", "--json", out, *QUICK)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    evaluations = json.loads(out.read_text())["evaluations"]
    assert [e["status"] for e in evaluations] == ["rejected", "correct"], [e.get("error") for e in evaluations]
    assert evaluations[0]["error"]["kind"] == "static_limits"
    # The reference survived the first candidate's source and served the second.
    assert evaluations[1]["env"]["workers"]["reference"]["origin"] == "kept from an earlier evaluation"


# --- speed of light as a physical bound -----------------------------------------------------------------


def test_an_exact_algebraic_rewrite_beats_the_flop_bound_honestly(kforge):
    proc, result = kforge.eval(problem("diag_matmul"), HERE / "honest" / "diag_row_scale.py", *QUICK)
    assert result["status"] == "correct", _summary(result)
    assert result["speed_class"] == "algebraically_cheaper"
    sol = result["sol"]
    # Beyond the FLOP bound, re-measured on fresh inputs, and within the physical one.
    assert sol["remeasured_ms"] * result["sol"]["slack"] < sol["sol_ms"]
    assert sol["hard"]["dependent_inputs"] == [True, True]
    assert sol["remeasured_ms"] * sol["slack"] >= sol["hard"]["hard_ms"]


def test_a_content_cache_within_the_speed_of_light_is_rejected(kforge):
    # On a loaded machine even a cache hit's fastest call can be within the speed-of-light bound; a
    # slack of 1000 puts every call within it here, so only the fresh-input check can catch the cache.
    proc, result = kforge.eval(problem("matmul"), HERE / "cheats" / "content_cache_hidden.py", *QUICK,
                               *CHEAT_SIZES["content_cache_hidden"], "--sol-slack", "1000")
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected" and result["error"]["kind"] == "suspicious", _summary(result)
    assert "cached results" in result["error"]["message"]
    assert not _failed(result, "speed_of_light"), result["checks"]
    fresh = result["timing"]["fresh_inputs"]
    # Confirmed on a second round of fresh sets before the rejection; each set's block ran a timing
    # block's five calls on seen sets before its fresh call.
    assert [r["looks_cached"] for r in fresh["rounds"]] == [True, True]
    assert len(fresh["fresh_calls_ms"]) == 6 and len(fresh["seen_calls_ms"]) == 30
    assert [len(b) for b in fresh["blocks_ms"]] == [6] * 6
    for r in fresh["rounds"]:
        assert min(r["fresh_calls_ms"]) > 10 * r["seen_lower_quartile_ms"]
    assert proc.returncode == 1


def test_a_content_cache_that_serves_only_old_inputs_is_rejected(kforge):
    # Written against the fresh-input check as it was: calls on the fresh set right after its first
    # call were the seen calls, and this cache computes those too (it answers only for inputs first seen
    # more than three calls ago), so it looked no faster on seen inputs and was judged correct with a
    # 30x to 500x speedup. The seen calls are now calls on the timing sets, like every timed call.
    proc, result = kforge.eval(problem("matmul"), HERE / "cheats" / "content_cache_aged.py", *QUICK,
                               *CHEAT_SIZES["content_cache_aged"], "--sol-slack", "1000")
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected" and result["error"]["kind"] == "suspicious", _summary(result)
    assert "cached results" in result["error"]["message"]
    assert proc.returncode == 1


def test_a_content_cache_that_slows_some_hits_on_purpose_is_rejected(kforge):
    # Written against the rule on (fresh, seen) pairs: two hits in five wait longer than a miss, so the
    # fresh calls were slower in only about 60% of pairs, under the 75% asked. Its median timed call is
    # still a hit, and so is the lower quartile of the calls on seen sets. At kforge's default 30 timed
    # repetitions: with 10, four of them slowed and one hit stalled by load made the median a stall (1
    # run in 8 under 2 busy loops, judged correct).
    proc, result = kforge.eval(problem("matmul"), HERE / "cheats" / "content_cache_jittered.py", *quick(30),
                               *CHEAT_SIZES["content_cache_jittered"], "--sol-slack", "1000")
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected" and result["error"]["kind"] == "suspicious", _summary(result)
    assert proc.returncode == 1


def test_a_content_cache_slower_than_eager_is_rejected_too(kforge):
    # Its hits (1 ms) are slower than eager's matmul (about 0.2 ms on an idle machine): it claims no
    # speedup, and was judged correct at its seen-input speed before every timed candidate was timed
    # on fresh inputs. Its misses (30 ms) give it away there. (Under heavy load eager's calls can
    # all stall past 1 ms; then it claims one, and is rejected the same way.)
    proc, result = kforge.eval(problem("matmul"), HERE / "cheats" / "content_cache_slow_hit.py", *QUICK)
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected" and result["error"]["kind"] == "suspicious", _summary(result)
    fresh = result["timing"]["fresh_inputs"]
    assert all(r["looks_cached"] for r in fresh["rounds"]) and len(fresh["rounds"]) == 2
    assert proc.returncode == 1


def test_an_honest_kernel_faster_than_eager_passes_the_fresh_input_check(kforge):
    proc, result = kforge.eval(problem("rowloop"), HERE / "honest" / "rowloop_fused.py", *QUICK, "--sol-slack", "1000")
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "correct" and result["speedup_vs_eager"] > 1, _summary(result)
    fresh = result["timing"]["fresh_inputs"]
    assert len(fresh["fresh_calls_ms"]) in (3, 6) and len(fresh["seen_calls_ms"]) == 5 * len(fresh["fresh_calls_ms"])
    assert fresh["seconds"] > 0


def test_the_exact_answer_to_a_degenerate_problem_is_correct_and_marked(kforge):
    proc, result = kforge.eval(problem("zero_output"), HERE / "honest" / "zero_output_exact.py", *QUICK)
    assert result["status"] == "correct", _summary(result)
    assert result["speed_class"] == "degenerate"
    assert result["calibration"]["degenerate"]


def test_an_ordinary_kernel_is_in_the_standard_class(kforge):
    proc, result = kforge.eval(problem("relu"), HERE / "honest" / "relu_native.py", *QUICK)
    assert result["status"] == "correct" and result["speed_class"] == "standard", _summary(result)


def test_kforge_run_goes_on_after_a_pathological_answer(kforge, tmp_path):
    # A scripted model (tests/e2e/scripted/model.py) answers first with the nesting cheat, then, asked
    # to repair it, with an honest kernel: the run must evaluate the second answer, not stop.
    e2e = HERE.parent / "e2e" / "scripted"
    (tmp_path / "1_nesting.md").write_text(
        "```python\n" + (HERE / "cheats" / "static_nesting.py").read_text() + "```\n")
    (tmp_path / "2_fast.md").write_text((e2e / "relu" / "4_fast.md").read_text())
    (tmp_path / "analysis.md").write_text((e2e / "relu" / "analysis.md").read_text())
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"kind": "analyze", "reply": "analysis.md"},
                                {"kind": "generate", "turn": 0, "reply": "1_nesting.md"},
                                {"kind": "generate", "turn": 1, "reply": "2_fast.md"}]))
    log = tmp_path / "calls.jsonl"
    model = f"exec:{sys.executable} {e2e / 'model.py'} {plan} {log}"
    proc = kforge.run("run", problem("relu"), "--target", "cpu", "--llm", model, "--rounds", "1", "--patience", "0",
                      "--out", tmp_path / "out", "--no-compile-baseline", "--eval-reps", "5", "--eval-warmup", "1",
                      "--eval-trials", "2", "--seed", "7")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    statuses = {c["step"]: c.get("status") for c in summary["candidates"]}
    assert statuses.get("r0.s0.a0") == "rejected", summary["candidates"]
    assert summary["best"]["step"] == "r0.s0.a1", summary["candidates"]
    # The repair prompt named the limit, so the model could act on it.
    generated = [json.loads(line) for line in log.read_text().splitlines() if '"generate"' in line]
    assert "static_limits" in json.dumps(generated[1]["request"])
