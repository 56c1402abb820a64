"""`kforge model` times the device in two steps of its own (the model's profile, and the end-to-end
measurement), and holds the device's timing lock through each, as an evaluation's timing does
(docs/gpu.md, "One measurement per GPU"). The cpu target times without the lock, so the test runs a
copy of it whose target.toml asks for one, in a kforge home of its own (as test_target_as_data.py
does). The test holds the lock itself, as another kforge process timing on the device would."""

import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

from e2e_support import HERE, ROOT

MINI_GPT = HERE / "problems" / "mini_gpt_block.py"


@pytest.fixture
def home(kforge):
    # Outside /tmp: the candidate sandbox puts a private tmpfs over /tmp.
    path = ROOT / "build" / "test-homes" / kforge.tmp.name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    shutil.copytree(ROOT / "worker", path / "worker", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    for shared in ("prompts", ".venv"):
        if (ROOT / shared).exists():
            (path / shared).symlink_to(ROOT / shared)
    cpu = path / "targets" / "cpu"
    shutil.copytree(ROOT / "targets" / "cpu", cpu)
    toml = (cpu / "target.toml").read_text()
    assert "[device_lock]" not in toml
    (cpu / "target.toml").write_text(toml + "\n[device_lock]\nexclusive = true\n")
    kforge.env["KFORGE_HOME"] = str(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


class StderrLines:
    """The lines a process writes to stderr, read on a thread; wait_for blocks until one holds a text."""

    def __init__(self, proc):
        self.lines, self.cond = [], threading.Condition()
        threading.Thread(target=self._read, args=(proc.stderr,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.lines.append(None)  # end of stream
            self.cond.notify_all()

    def wait_for(self, text, after=0, timeout=300):
        def found():
            return next((i for i, l in enumerate(self.lines) if i >= after and (l is None or text in l)), None)
        with self.cond:
            assert self.cond.wait_for(lambda: found() is not None, timeout), f"no '{text}' in {self.lines}"
            i = found()
            assert self.lines[i] is not None, f"stderr ended without '{text}':\n{''.join(self.lines[:-1])}"
            return i


def test_the_profile_and_the_end_to_end_measurement_wait_for_the_devices_timing_lock(kforge, home):
    lock_path = kforge.tmp / "state" / "locks" / "cpu-0.lock"
    lock_path.parent.mkdir(parents=True)
    lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another process is timing on the device
    llm = f"exec:{sys.executable} {HERE / 'scripted' / 'model.py'} {HERE / 'scripted' / 'model_cmd' / 'plan.json'} {kforge.tmp / 'calls.jsonl'}"
    proc = subprocess.Popen([str(kforge.binary), "model", str(MINI_GPT), "--target", "cpu", "--llm", llm, "--top", "0",
                             "--threads", "1", "--no-e2e-compile", "--e2e-reps", "3", "--profile-reps", "2", "--json",
                             str(kforge.tmp / "report.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=kforge.env, cwd=kforge.tmp)
    out = kforge.tmp / "kforge-out" / "model-1"
    try:
        err = StderrLines(proc)
        # The profile waits while the lock is held elsewhere, and starts once it is free.
        waiting = err.wait_for(f"waiting for {lock_path}")
        assert not (out / "analysis.json").exists()
        fcntl.flock(lock, fcntl.LOCK_UN)
        profiling = err.wait_for("kforge model: profiling", after=waiting)
        # Taken back while kforge profiles: the lock is free again only once the profile is done,
        # and the end-to-end measurement waits for it in turn.
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert (out / "analysis.json").is_file()
        waiting = err.wait_for(f"waiting for {lock_path}", after=profiling)
        assert not (out / "report.json").exists()
        fcntl.flock(lock, fcntl.LOCK_UN)
        assert proc.wait(timeout=600) == 0, "".join(l for l in err.lines if l)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(lock)
    report = json.loads((kforge.tmp / "report.json").read_text())
    assert set(report["device_lock"]) == {"analyze", "finish"}
    for step in report["device_lock"].values():
        assert step["path"] == str(lock_path) and step["waited_seconds"] > 0, report["device_lock"]
