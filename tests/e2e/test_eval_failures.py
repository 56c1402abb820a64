"""Broken and hostile candidates get the right status in bounded time and leave nothing behind."""

import time

import pytest

from e2e_support import candidate, problem, stray_processes

# Fast settings: these tests are about verdicts, not speed.
QUICK = ["--no-compile-baseline", "--reps", "5", "--warmup", "1"]
TINY = problem("tiny_add")


def test_correct_candidate_passes(kforge):
    proc, result = kforge.eval(TINY, candidate("correct"), *QUICK)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "correct"
    assert result["correctness"]["trials"] == 5
    assert result["correctness"]["tolerances"]["output"]["atol"] == 1e-4
    assert result["timing"]["candidate"]["median_ms"] > 0
    assert result["speedup_vs_eager"] > 0
    assert result["schema_version"] == 2
    assert "status: correct" in proc.stdout


@pytest.mark.parametrize(
    "name, status, kind, text",
    [
        ("compile_error", "compile_error", "compile_error", "undefined_variable"),
        ("syntax_error", "compile_error", "compile_error", "SyntaxError"),
        ("no_modelnew", "runtime_error", "runtime_error", "no class ModelNew"),
        ("wrong_values", "incorrect", "mismatch", "index [7]"),
        ("nan_output", "incorrect", "mismatch", "NaN at index [3]"),
        ("wrong_shape", "incorrect", "mismatch", "shape [4095], expected [4096]"),
        ("segfault", "runtime_error", "crash", "signal 11"),
        ("exit_at_import", "runtime_error", "crash", "exit code 0"),
        ("output_flood", "runtime_error", "output_flood", "output limit"),
        # Replies forged on the reply channel (fd 3) are not the reply to the pending request.
        ("forged_result", "rejected", "protocol", "nobody asked for"),
        ("patched_clock", "rejected", "monkey_patching", "perf_counter_ns"),
        ("mutates_input", "rejected", "input_mutation", "changed its inputs"),
        # Beyond the cpu target's address-space limit for the candidate (address_space_gb = 32).
        ("allocates_too_much", "runtime_error", "device_oom", "can't allocate memory"),
    ],
)
def test_broken_candidate_status(kforge, name, status, kind, text):
    proc, result = kforge.eval(TINY, candidate(name), *QUICK)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert result["status"] == status, result
    assert result["error"]["kind"] == kind
    assert text in result["error"]["message"] + result["error"].get("log", ""), result["error"]


def test_a_cached_input_changed_in_place_does_not_change_what_earlier_trials_kept(kforge):
    # get_inputs returns the same tensor every call and the model doubles it: the next trial's call
    # must not change the inputs and outputs kept for the trials before it.
    proc, result = kforge.eval(problem("cached_inplace"), candidate("inplace_double"), *QUICK)
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "correct", {k: result.get(k) for k in ("error", "checks")}
    assert result["correctness"]["trials_passed"] == 5


def test_compile_error_is_trimmed_to_file_and_line(kforge):
    _, result = kforge.eval(TINY, candidate("compile_error"), *QUICK)
    log = result["error"]["log"]
    assert "error:" in log and ".cpp:3:" in log, log
    assert len(log) < 4200
    with open(result["error"]["log_path"]) as f:
        assert "undefined_variable" in f.read()


def test_infinite_loop_times_out(kforge):
    start = time.monotonic()
    proc, result = kforge.eval(TINY, candidate("infinite_loop"), "--timeout", "3", *QUICK)
    assert proc.returncode == 1
    assert result["status"] == "timeout"
    assert time.monotonic() - start < 60


@pytest.mark.parametrize("name, marker, status", [
    ("fork_child", "kforge_stray_fork", "correct"),
    ("setsid_child", "kforge_stray_setsid", "incorrect"),
])
def test_children_do_not_survive(kforge, name, marker, status):
    proc, result = kforge.eval(TINY, candidate(name), *QUICK)
    assert result["status"] == status, result
    assert stray_processes(marker) == []


def test_mismatch_reports_error_index_and_shape(kforge):
    _, result = kforge.eval(TINY, candidate("wrong_values"), *QUICK)
    mismatch = result["correctness"]["mismatch"]
    assert mismatch["index"] == [7]
    assert mismatch["shape"] == [4096]
    assert mismatch["max_abs_error"] == pytest.approx(0.5, rel=1e-3)


@pytest.mark.parametrize("args, text", [
    (["eval", "missing.py", "x.py"], "problem file not found: missing.py"),
    (["eval", str(problem("tiny_add")), "missing.py"], "candidate file not found"),
    (["eval", str(problem("tiny_add")), str(candidate("correct")), "--target", "tpu"], "unknown target 'tpu'"),
    (["eval", str(problem("tiny_add")), str(candidate("correct")), "--set", "novalue"], "--set expects NAME=VALUE"),
])
def test_usage_errors_exit_2_with_one_line(kforge, args, text):
    proc = kforge.run(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert text in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name, text", [
    ("no_model", "defines no Model"),
    ("nondeterministic", "nondeterministic"),
    ("raises", "this reference is broken"),
])
def test_problem_errors_are_not_blamed_on_the_candidate(kforge, name, text):
    proc, result = kforge.eval(problem(name), candidate("passthrough"), *QUICK)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert result["status"] == "problem_error"
    assert text in result["error"]["message"]


def test_unknown_set_name_is_a_problem_error(kforge):
    proc, result = kforge.eval(TINY, candidate("correct"), "--set", "nosuch=3", *QUICK)
    assert proc.returncode == 2
    assert "nosuch" in result["error"]["message"]


@pytest.mark.parametrize("override, text", [("nosuch=3", "not a top-level assignment"),
                                            ("size=abc", "so the value must be an integer")])
def test_a_set_mistake_is_said_without_the_workers_traceback(kforge, override, text):
    """A --set typo or a value of the wrong kind is the user's input: one line saying what is wrong,
    not the worker's internal stack."""
    proc, result = kforge.eval(TINY, candidate("correct"), "--set", override, *QUICK)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert text in result["error"]["message"]
    assert "Traceback" not in proc.stdout + proc.stderr and "kforge_worker" not in proc.stdout + proc.stderr


def test_secrets_never_reach_the_candidate(kforge, tmp_path):
    canary = "sk-kforge-canary-5f2b9c"
    config = tmp_path / "kforge.toml"
    config.write_text(f'[llm]\napi_key = "{canary}"\n')
    config.chmod(0o600)
    env = dict(kforge.env, OPENAI_API_KEY=canary, ANTHROPIC_API_KEY=canary, KFORGE_CONFIG=str(config),
               MY_SERVICE_TOKEN=canary)
    proc, result = kforge.eval(TINY, candidate("dump_environ"), *QUICK, env=env)
    # It runs (sandboxed) and is then rejected for walking the file system.
    assert result["status"] == "rejected" and result["error"]["kind"] == "static.file_io", result
    log_dir = result["env"]["log_dir"]
    with open(f"{log_dir}/candidate.log") as f:
        log = f.read()
    assert "ENVIRON-DUMP" in log
    assert canary not in log
    assert "FOUND-CANARY-IN" not in log
    assert canary not in proc.stdout + proc.stderr


def test_a_device_that_does_not_exist_is_not_blamed_on_the_candidate(kforge):
    # cuda:7 exists neither on the CPU machines nor on a one-GPU machine.
    # Nor on the problem: the machine cannot evaluate there (environment_error, exit 4).
    proc, result = kforge.eval(TINY, candidate("correct"), "--device", "cuda:7", *QUICK)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert result["status"] == "environment_error"
    assert result["error"]["kind"] == "worker_start"
    assert result["error"]["message"].startswith("the reference worker did not start: ")
