"""Memory-aware scheduling on the cpu target, with a small simulated device ([memory] device_gb):
evaluations whose estimates do not fit together never run at once, an out-of-memory beside other
evaluations is tried again alone, and `problem_error` is kept for a reference that does not fit alone.

Other evaluations on the device are either a second problem of a bench or a reservation the test
writes into the device's ledger for a process it owns (as another kforge would hold); each test
observes order (timestamps, the ledger's contents), never durations."""

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from e2e_support import HERE, candidate, problem

QUICK = ["--no-compile-baseline", "--reps", "5", "--warmup", "1", "--trials", "2", "--seed", "3"]
TINY = problem("tiny_add")
# tiny_add's evaluation is estimated at 384 KiB (two processes of 144 KiB, and the candidate's 6 kept
# timed outputs of 16 KiB: a timing block's five and a fresh call's): 1 MiB holds two.
DEVICE_GB = 1 / 1024


def write_config(tmp: Path, device_gb: float) -> Path:
    path = tmp / "kforge.toml"
    path.write_text(f"[memory]\ndevice_gb = {device_gb!r}\n")
    return path


def ledger_path(kforge) -> Path:
    return kforge.tmp / "state" / "locks" / "cpu-0.memory"


class Holder:
    """A reservation of `nbytes` on the cpu device held by a process of the test's own."""

    def __init__(self, kforge, nbytes: int):
        self.proc = subprocess.Popen(["sleep", "600"])
        path = ledger_path(kforge)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"next_ticket": 2, "starts": 1, "free_bytes": 64 << 30, "reservations": [
            {"pid": self.proc.pid, "ticket": 1, "bytes": nbytes, "alone": False, "running": True}]}))

    def end(self):
        self.proc.kill()
        self.proc.wait()
        return time.time()


def start_eval(kforge, problem_path, candidate_path, config):
    out = kforge.tmp / "result.json"
    log = open(kforge.tmp / "eval.log", "w")
    proc = subprocess.Popen([str(kforge.binary), "--config", str(config), "eval", str(problem_path),
                             str(candidate_path), "--json", str(out), *QUICK],
                            stdout=log, stderr=subprocess.STDOUT, env=kforge.env, cwd=kforge.tmp)
    return proc, out


def finish_eval(kforge, proc, out):
    assert proc.wait(timeout=600) is not None
    text = (kforge.tmp / "eval.log").read_text()
    assert out.exists(), text
    return proc.returncode, json.loads(out.read_text()), text


def wait_for_reservation(kforge, proc, predicate, what):
    """Polls the ledger until a reservation of `proc` matches `predicate`."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"kforge ended before {what}: " + (kforge.tmp / "eval.log").read_text()
        try:
            entries = json.loads(ledger_path(kforge).read_text())["reservations"]
        except (OSError, ValueError, KeyError):
            entries = []
        if any(e["pid"] == proc.pid and predicate(e) for e in entries):
            return
        time.sleep(0.05)
    pytest.fail(f"no reservation {what} within 300 s")


def oom_problem(tmp: Path, first_only: bool) -> Path:
    """tiny_add whose reference runs out of memory outside the meta trace: on its first call only (a
    device momentarily full), or always (a problem that does not fit the device)."""
    marker = tmp / "reference-ran-out-once"
    path = tmp / ("oom_once.py" if first_only else "oom_always.py")
    condition = f"not os.path.exists({str(marker)!r})" if first_only else "True"
    path.write_text(TINY.read_text().replace("    def forward(self, a, b):\n", f"""    def forward(self, a, b):
        if a.device.type != "meta" and {condition}:
            open({str(marker)!r}, "w").close()
            raise MemoryError("simulated: the device is full")
""").replace("import torch\n", "import os\nimport torch\n", 1))
    return path


def test_an_evaluation_waits_for_memory_another_process_holds(kforge):
    config = write_config(kforge.tmp, DEVICE_GB)
    holder = Holder(kforge, 900 << 10)  # 900 KiB of 1 MiB: no room for 288 KiB
    proc, out = start_eval(kforge, TINY, candidate("correct"), config)
    wait_for_reservation(kforge, proc, lambda e: not e["running"], "waiting")
    released_at = holder.end()
    code, result, log = finish_eval(kforge, proc, out)
    assert code == 0, log
    memory = result["memory"]
    assert memory["started_at"] >= released_at
    assert memory["waited_seconds"] > 0
    assert memory["budget_bytes"] == int(DEVICE_GB * (1 << 30))
    assert memory["estimate"]["method"] == "meta"
    assert memory["estimate_bytes"] == 2 * memory["estimate"]["process_bytes"] + 6 * memory["estimate"]["output_bytes"]
    assert memory["shared_device"] is False and memory["retries"] == []
    assert json.loads(ledger_path(kforge).read_text())["reservations"] == []  # released at the end


def test_candidate_out_of_memory_beside_another_is_retried_alone_then_reported(kforge):
    config = write_config(kforge.tmp, DEVICE_GB)
    holder = Holder(kforge, 10 << 10)  # fits beside the evaluation
    proc, out = start_eval(kforge, TINY, candidate("allocates_too_much"), config)
    # The first try shared the device and ran out of memory: the second waits for the device alone.
    wait_for_reservation(kforge, proc, lambda e: e["alone"] and not e["running"], "waiting to run alone")
    holder.end()
    code, result, log = finish_eval(kforge, proc, out)
    assert code == 1, log
    assert result["status"] == "runtime_error"
    assert result["error"]["kind"] == "device_oom"
    memory = result["memory"]
    assert memory["alone"] is True and memory["shared_device"] is False
    [first] = memory["retries"]
    assert first["status"] == "runtime_error" and first["error"]["kind"] == "device_oom"
    assert first["memory"]["shared_device"] is True
    assert first["memory"]["ended_at"] <= memory["started_at"]
    assert Path(result["env"]["log_dir"]).name == "alone"  # the first try's logs are kept beside


def test_candidate_out_of_memory_alone_is_not_retried(kforge):
    code, result, log = finish_eval(kforge, *start_eval(kforge, TINY, candidate("allocates_too_much"),
                                                        write_config(kforge.tmp, DEVICE_GB)))
    assert code == 1, log
    assert result["error"]["kind"] == "device_oom"
    assert result["memory"]["shared_device"] is False and result["memory"]["retries"] == []


def test_reference_out_of_memory_beside_another_is_retried_and_passes_alone(kforge):
    config = write_config(kforge.tmp, DEVICE_GB)
    holder = Holder(kforge, 10 << 10)
    proc, out = start_eval(kforge, oom_problem(kforge.tmp, first_only=True), candidate("correct"), config)
    wait_for_reservation(kforge, proc, lambda e: e["alone"] and not e["running"], "waiting to run alone")
    holder.end()
    code, result, log = finish_eval(kforge, proc, out)
    assert code == 0, log
    assert result["status"] == "correct"
    [first] = result["memory"]["retries"]
    assert first["status"] == "problem_error" and first["error"]["cause"] == "device_oom"


def test_reference_that_does_not_fit_alone_is_a_problem_error(kforge):
    config = write_config(kforge.tmp, DEVICE_GB)
    holder = Holder(kforge, 10 << 10)
    proc, out = start_eval(kforge, oom_problem(kforge.tmp, first_only=False), candidate("correct"), config)
    wait_for_reservation(kforge, proc, lambda e: e["alone"] and not e["running"], "waiting to run alone")
    holder.end()
    code, result, log = finish_eval(kforge, proc, out)
    assert code == 2, log
    assert result["status"] == "problem_error"
    assert result["error"]["cause"] == "device_oom"
    assert result["error"]["message"].startswith("the reference alone does not fit the device"), result["error"]
    assert len(result["memory"]["retries"]) == 1


def test_bench_never_runs_two_evaluations_that_exceed_the_device_together(kforge, tmp_path):
    # Two problems whose evaluations (288 KiB each, untimed) fit the device one at a time, not both at once;
    # 30 trials keep each on the device long enough for the other to ask while it runs.
    problems = tmp_path / "problems"
    candidates = tmp_path / "candidates"
    problems.mkdir()
    candidates.mkdir()
    for name in ("add_a", "add_b"):
        (problems / f"{name}.py").write_text(TINY.read_text())
        (candidates / f"{name}.py").write_text(candidate("correct").read_text())
    suite = tmp_path / "suite.txt"
    suite.write_text("".join(f"{problems / n}.py\n" for n in ("add_a", "add_b")))
    budget = 400 << 10
    config = write_config(tmp_path, budget / (1 << 30))
    proc = kforge.run("--config", config, "bench", suite, "--target", "cpu", "--candidates", candidates, "--jobs", "2",
                      "--no-timing", "--out", tmp_path / "out", "--trials", "30", "--seed", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with sqlite3.connect(kforge.tmp / "state" / "kforge.db") as db:
        docs = [json.loads(r[0]) for r in db.execute("SELECT result_json FROM evaluations")]
    assert len(docs) == 2 and all(d["status"] == "correct" for d in docs), docs
    first, second = sorted((d["memory"] for d in docs), key=lambda m: m["started_at"])
    assert first["estimate_bytes"] <= budget < first["estimate_bytes"] + second["estimate_bytes"]
    assert first["ended_at"] <= second["started_at"]
    assert not first["shared_device"] and not second["shared_device"]
