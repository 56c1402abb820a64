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
import threading

import pytest

from e2e_support import HERE, ROOT

MINI_GPT = HERE / "problems" / "mini_gpt_block.py"


@pytest.fixture
def locked_cpu(home):
    """The cpu target, copied into the test's home (e2e_support.home) with a timing lock."""
    cpu = home / "targets" / "cpu"
    shutil.copytree(ROOT / "targets" / "cpu", cpu)
    toml = (cpu / "target.toml").read_text()
    assert "[device_lock]" not in toml
    (cpu / "target.toml").write_text(toml + "\n[device_lock]\nexclusive = true\n")


class StderrLines:
    """The lines a process writes to stderr, read on a thread; wait_for blocks until one holds a text
    (or the stream ends)."""

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

    def wait_for(self, text, timeout=300):
        def seen():
            return any(line is not None and text in line for line in self.lines)
        with self.cond:
            assert self.cond.wait_for(lambda: seen() or None in self.lines, timeout), f"no '{text}' in {self.lines}"
            assert seen(), f"stderr ended without '{text}':\n{''.join(self.lines[:-1])}"


def test_the_profile_and_the_end_to_end_measurement_wait_for_the_devices_timing_lock(kforge, locked_cpu):
    lock_path = kforge.tmp / "state" / "locks" / "cpu-0.lock"
    lock_path.parent.mkdir(parents=True)
    lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    out = kforge.tmp / "kforge-out" / "model-1"

    def waits_while_held(args, not_yet):
        """kforge model ARGS with the lock held here: it waits before writing ``not_yet``, and goes
        on once the lock is free. One step per command: a lock released here between two steps of
        one command could go to kforge's next step before this process's waiting flock."""
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process is timing on the device
        proc = subprocess.Popen([str(kforge.binary), "model", *map(str, args)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=kforge.env, cwd=kforge.tmp)
        try:
            err = StderrLines(proc)
            err.wait_for(f"waiting for {lock_path}")
            assert not not_yet.exists()
            fcntl.flock(lock, fcntl.LOCK_UN)
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
        return proc.returncode, "".join(l for l in err.lines if l)

    try:
        # The profile: a region filter that matches nothing stops the command right after it.
        rc, err = waits_while_held([MINI_GPT, "--target", "cpu", "--top", "0", "--regions", "nosuch", "--threads", "1",
                                    "--no-e2e-compile", "--e2e-reps", "3", "--profile-reps", "2"], out / "analysis.json")
        assert rc == 2 and "--regions: no region is named or of kind nosuch" in err, err
        # The end-to-end measurement, on resume.
        rc, err = waits_while_held(["--resume", out, "--regions", "norm", "--json", kforge.tmp / "report.json"],
                                   out / "report.json")
        assert rc == 0, err
    finally:
        os.close(lock)
    report = json.loads((kforge.tmp / "report.json").read_text())
    assert set(report["device_lock"]) == {"analyze", "finish"}
    for step in report["device_lock"].values():
        assert step["path"] == str(lock_path) and step["waited_seconds"] > 0, report["device_lock"]
