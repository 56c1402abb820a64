"""`kforge model` times the device in two steps of its own (the model's profile, and the end-to-end
measurement), and holds the device's timing lock through each, as an evaluation's timing does
(docs/gpu.md, "One measurement per GPU"). The cpu target times without the lock, so the test runs a
copy of it whose target.toml asks for one, in a kforge home of its own (e2e_support.home). The
test holds the lock itself, as another kforge process timing on the device would."""

import fcntl
import json
import os
import shutil
import subprocess
import time

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
        log = kforge.tmp / "stderr.txt"
        with open(log, "w") as stderr:
            proc = subprocess.Popen([str(kforge.binary), "model", *map(str, args)], stdout=subprocess.DEVNULL,
                                    stderr=stderr, text=True, env=kforge.env, cwd=kforge.tmp)
        try:
            deadline = time.monotonic() + 300
            while f"waiting for {lock_path}" not in log.read_text():
                assert proc.poll() is None and time.monotonic() < deadline, f"no wait for the lock:\n{log.read_text()}"
                time.sleep(0.1)
            assert not not_yet.exists()
            fcntl.flock(lock, fcntl.LOCK_UN)
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
        return proc.returncode, log.read_text()

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
