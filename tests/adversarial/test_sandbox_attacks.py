"""Candidates that attack the machine and the run rather than the verdict: the shared build caches,
host files, the compiler kforge runs for them, the disk, other processes (docs/isolation.md).

Each attack does its work in C (the runtime checks of the Python audit hook never see it) and, when
the sandbox stops it, raises at import with the system's answer ("attack blocked: ...: Read-only file
system"); where it succeeded it stays quiet and computes the right answer, which is how it was judged
`correct` before the sandbox stopped it (attacks that leave something behind rather than cheat, a
daemon or state for the next candidate, compute the right answer and are checked from outside). Every
test also checks host facts: the cache entries that existed before are byte-for-byte unchanged,
nothing was planted, the project's files are unchanged, and no folder or process of the evaluation
is left.
"""

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from adversarial_support import HERE, problem

ROOT = HERE.parents[1]
ATTACKS = HERE / "sandbox"
QUICK = ["--no-compile-baseline", "--reps", "5", "--warmup", "1", "--seed", "7", "--trials", "2"]

# attack -> (status, what the error message must say). The message is the system's answer to the
# attack inside the sandbox: proof that the sandbox, not a bug of the attack, stopped it.
BLOCKED = {
    "cache_overwrite": ("Read-only file system",),
    "cache_proc_fd": ("Permission denied",),  # the file is kforge's, the candidate is not root
    "cache_symlink_swap": ("Read-only file system",),
    "extensions_plant": ("Read-only file system",),
    "pycache_plant": ("Read-only file system",),
    "triton_cache_poison": ("No such file or directory",),
    "read_shadow": ("No such file or directory",),
    "list_project": ("No such file or directory",),
    "runs_as_root": ("uid 65534",),
    "include_leak": ("No such file or directory",),
    "compiler_wrapper": ("the wrapper wrote nothing",),
    "ptrace_init": ("Operation not permitted",),
    "input_mapping_write": ("Operation not permitted",),  # the seals of the input set's memfd
    "preload_compiler": ("No such file or directory",),  # the library is not where the compiler runs
    "plant_startup_files": ("no planted file ran",),
    "read_api_keys": ("found no key",),
    "hardlink_cache": ("Invalid cross-device link",),
    "mutate_shared_inputs": ("Read-only file system",),
}
# Planted files an attack may leave in the shared cache (all must be absent afterwards).
PLANTED = ("planted_", "poisoned-", "pwned-by-wrapper", ".swap-")
# API keys kforge reads from its environment (its LLM clients): none may reach a candidate or its
# compiler (read_api_keys), nor appear in what kforge reports about it.
CANARY = "kforge-canary-7c1e"
SECRETS = {name: f"{CANARY}-{name}" for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KFORGE_API_KEY", "HF_TOKEN")}


def _sandboxed():
    return subprocess.run(["bwrap", "--version"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not _sandboxed(), reason="bubblewrap is not installed: these attacks need the sandbox")


def _cache_root(kforge) -> Path:
    return Path(kforge.env["KFORGE_CACHE_DIR"])


def _snapshot(cache: Path) -> dict:
    files = {}
    for sub in ("build", "torch_extensions", "triton", "inductor", "pycache"):
        for path in (cache / sub).rglob("*") if (cache / sub).exists() else []:
            if path.is_file() and not path.is_symlink():
                files[path] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def _project_hashes() -> dict:
    paths = [ROOT / "CMakeLists.txt", problem("relu"), *ATTACKS.glob("*.py")]
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def _processes_mentioning(text: str) -> list:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if text.encode() in environ:
            found.append(pid)
    return found


class Host:
    """Runs kforge with a private TMPDIR and records what an attack must not change."""

    def __init__(self, kforge, tmp_gb=None, memory_gb=None):
        self.kforge = kforge
        self.tmp = kforge.tmp / "tmp"
        self.tmp.mkdir()
        self.env = dict(kforge.env, TMPDIR=str(self.tmp), **SECRETS)
        sandbox = {"tmp_gb": tmp_gb, "memory_gb": memory_gb}
        if any(v is not None for v in sandbox.values()):
            (kforge.tmp / "kforge.toml").write_text(
                "[sandbox]\n" + "".join(f"{k} = {v}\n" for k, v in sandbox.items() if v is not None))
        self.cache = _cache_root(kforge)
        self.before = _snapshot(self.cache)
        self.project = _project_hashes()

    def eval(self, candidate: Path, prob="relu"):
        proc, result = self.kforge.eval(problem(prob), candidate, *QUICK, env=self.env)
        assert CANARY not in json.dumps(result) + proc.stdout + proc.stderr
        return proc, result

    def eval_several(self, *candidates: Path, prob="relu") -> list:
        """One `kforge eval` of several candidates: one worker pool, the reference kept between them."""
        out = self.kforge.tmp / "several.json"
        proc = self.kforge.run("eval", problem(prob), *candidates, "--json", out, *QUICK, env=self.env)
        assert out.exists(), proc.stdout + proc.stderr
        return json.loads(out.read_text())["evaluations"]

    def assert_untouched(self):
        after = _snapshot(self.cache)
        changed = [str(p) for p, h in self.before.items() if after.get(p) != h]
        assert not changed, f"cache entries changed or removed: {changed}"
        planted = [str(p) for p in self.cache.rglob("*") if any(p.name.startswith(m) for m in PLANTED)]
        assert not planted, f"files planted in the cache: {planted}"
        assert _project_hashes() == self.project
        assert list(self.tmp.iterdir()) == [], "the evaluation left folders behind"
        assert _processes_mentioning(str(self.tmp)) == [], "the evaluation left processes behind"


def _honest(host):
    proc, result = host.eval(HERE / "honest" / "relu_native.py")
    assert result is not None and result["status"] == "correct", (proc.stdout + proc.stderr)[-2000:]
    return result


def _assert_blocked(result, answer):
    message = (result.get("error") or {}).get("message", "") + (result.get("error") or {}).get("log", "")
    assert result["status"] == "runtime_error", {"status": result["status"], "error": result.get("error")}
    assert "attack blocked" in message and answer in message, message[-1500:]
    assert result["env"]["isolation"] == "bubblewrap"


@pytest.mark.parametrize("name", sorted(BLOCKED))
def test_attack_is_blocked(kforge, name):
    host = Host(kforge)
    _honest(host)  # the victim: a library of another source is in the cache
    host.before = _snapshot(host.cache)
    proc, result = host.eval(ATTACKS / f"{name}.py")
    assert result is not None, proc.stdout + proc.stderr
    _assert_blocked(result, BLOCKED[name][0])
    host.assert_untouched()
    # The victim still loads and is still right.
    assert _honest(host)["build"]["events"][0]["cache_hit"]
    host.assert_untouched()


@pytest.mark.parametrize("name", ["fill_tmp", "fill_own_folder"])
def test_disk_quota(kforge, name):
    host = Host(kforge, tmp_gb=0.05)
    proc, result = host.eval(ATTACKS / f"{name}.py")
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected", {"status": result["status"], "error": result.get("error")}
    assert any(c["name"] == "disk_quota" and c["verdict"] == "fail" for c in result["checks"]), result["checks"]
    assert result["error"]["kind"] == "disk_quota"
    host.assert_untouched()


def _zombie_children(pid: int) -> list:
    found = []
    for child in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == pid:
            found.append(child)
    return found


def test_candidate_runs_under_an_unprivileged_host_uid(kforge):
    """Read from outside the sandbox: /proc/PID/status of the candidate worker while it runs. Also:
    kforge reaps the processes of a sandbox as they exit (no zombie lives on through the evaluation)."""
    host = Host(kforge)
    out = kforge.tmp / "result.json"
    proc = subprocess.Popen([str(kforge.binary), "eval", problem("relu"), HERE / "honest" / "relu_native.py", "--json",
                             out, *QUICK], env=host.env, cwd=kforge.tmp, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    uids = {}
    zombies = {}  # pid -> when first seen
    while proc.poll() is None:
        now = time.time()
        for z in _zombie_children(proc.pid):
            zombies.setdefault(z, now)
        lasting = [z for z, since in zombies.items() if now - since > 5 and z in _zombie_children(proc.pid)]
        assert not lasting, f"zombie children of kforge for more than 5 s: {lasting}"
        for pid in _processes_mentioning(str(host.tmp)):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            # The worker itself (bubblewrap and setpriv above it carry its command line as arguments).
            if b"python" in os.path.basename(cmdline[0]) and b"kforge_worker" in cmdline and b"candidate" in cmdline:
                uids[pid] = [int(v) for v in status.split("Uid:")[1].split("\n")[0].split()]
        time.sleep(0.02)
    assert proc.returncode == 0, proc.stdout.read().decode()[-2000:]
    assert uids, "no candidate worker was seen running"
    expected = 65534 if os.geteuid() == 0 else os.geteuid()
    for pid, ids in uids.items():
        assert ids == [expected] * 4, (pid, ids)  # real, effective, saved and file-system uid
    host.assert_untouched()


def test_folders_of_a_killed_run_are_removed_by_the_next(kforge):
    host = Host(kforge)
    proc = subprocess.Popen([str(kforge.binary), "eval", problem("relu"), HERE / "honest" / "relu_native.py",
                             *QUICK], env=host.env, cwd=kforge.tmp, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not any(p.name.startswith("kforge-eval-") for p in host.tmp.iterdir()) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = sorted(p.name for p in host.tmp.iterdir())
    assert any(name.startswith(f"kforge-eval-{proc.pid}-") for name in left), left
    unrelated = host.tmp / "kforge-eval-notapid"
    unrelated.mkdir()
    deadline = time.time() + 30  # the killed run's workers die with it (parent-death signal)
    while _processes_mentioning(str(host.tmp)) and time.time() < deadline:
        time.sleep(0.1)
    _honest(host)
    assert sorted(p.name for p in host.tmp.iterdir()) == ["kforge-eval-notapid"]
    unrelated.rmdir()
    host.assert_untouched()


def test_load_inline_is_built_by_kforge_and_then_a_cache_hit(kforge):
    """The candidate's cache miss goes to kforge's builder: the entry holds only the library and the
    completion marker, owned by kforge, and the next evaluation of that source loads it directly."""
    host = Host(kforge)
    candidate = HERE / "honest" / "relu_load_inline.py"
    runs = []
    for _ in range(2):
        proc, result = kforge.eval(problem("relu"), candidate, *QUICK, "--no-timing", env=host.env)
        assert result is not None and result["status"] == "correct", (proc.stdout + proc.stderr)[-2000:]
        runs.append(result["build"]["events"][0])
    assert [e["path"] for e in runs] == ["load_inline", "load_inline"]
    assert runs[1]["cache_hit"] and runs[0]["key"] == runs[1]["key"]
    entry = host.cache / "torch_extensions" / runs[0]["name"]
    assert sorted(p.name for p in entry.iterdir()) == ["kforge-complete", runs[0]["name"] + ".so"]
    assert all(p.stat().st_uid == os.geteuid() for p in [entry, *entry.iterdir()])
    host.assert_untouched()


def _processes_running(argument: bytes) -> list:
    """Processes with `argument` among the words of their command line (a daemon's marker)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if argument in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                found.append(pid)
        except OSError:
            continue
    return found


def test_another_evaluation_is_out_of_sight(kforge):
    """A concurrent evaluation's folder (a live owner's, so no kforge removes it) and the reference's
    folder of the same run lie beside the candidate's folder on the host; it sees neither, nor any
    process outside its sandbox."""
    host = Host(kforge)
    other = host.tmp / f"kforge-eval-{os.getpid()}-concurrent" / "candidate"
    other.mkdir(parents=True)
    (other / "candidate.py").write_text("# another evaluation's candidate\n")
    proc, result = host.eval(ATTACKS / "read_other_evaluation.py")
    assert result is not None, proc.stdout + proc.stderr
    _assert_blocked(result, "No such file or directory")
    assert "concurrent" not in result["error"]["message"] and "kforge-ref-" not in result["error"]["message"]
    assert (other / "candidate.py").read_text() == "# another evaluation's candidate\n"
    for path in (other / "candidate.py", other, other.parent):
        path.unlink() if path.is_file() else path.rmdir()
    host.assert_untouched()


def test_the_reference_survives_a_candidate_that_signals_it(kforge):
    host = Host(kforge)
    evaluations = host.eval_several(ATTACKS / "kill_reference.py", HERE / "honest" / "relu_native.py")
    _assert_blocked(evaluations[0], "No such process")
    assert "0 processes outside" in evaluations[0]["error"]["message"]
    assert evaluations[1]["status"] == "correct", evaluations[1].get("error")
    assert evaluations[1]["env"]["workers"]["reference"]["origin"] == "kept from an earlier evaluation"
    host.assert_untouched()


def test_a_daemon_does_not_outlive_its_evaluation(kforge):
    """Its own daemon and the compiler's run while kforge does (seen from outside, so the attack is
    real) and are gone when kforge ends (nothing of a sandbox outlives it)."""
    host = Host(kforge)
    out = kforge.tmp / "result.json"
    proc = subprocess.Popen([str(kforge.binary), "eval", problem("relu"), ATTACKS / "daemon_left_behind.py",
                             "--json", out, *QUICK], env=host.env, cwd=kforge.tmp, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    seen = set()
    while proc.poll() is None:
        seen.update(m for m in (b"612347", b"612348") if _processes_running(m))
        time.sleep(0.05)
    log = proc.stdout.read().decode()[-2000:]
    assert seen == {b"612347", b"612348"}, (seen, log)
    result = json.loads(out.read_text())
    # Not an attack on the verdict: it computes the right answer.
    assert result["status"] == "correct", result.get("error")
    left = _processes_running(b"612347") + _processes_running(b"612348")
    assert not left, f"daemons left running: {left}"
    host.assert_untouched()


def _host_sysv_keys() -> set:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[0]) for line in lines}


def test_nothing_persists_from_one_candidate_to_the_next(kforge):
    """/dev/shm, /tmp, System V IPC and abstract sockets are the sandbox's own: the next candidate (in
    the same run, its process started while the first one ran) finds nothing, nor does the host."""
    host = Host(kforge)
    evaluations = host.eval_several(ATTACKS / "persist_plant.py", ATTACKS / "persist_probe.py")
    assert evaluations[0]["status"] == "correct", evaluations[0].get("error")
    _assert_blocked(evaluations[1], "No such file or directory")
    assert "Connection refused" in evaluations[1]["error"]["message"]
    assert not Path("/dev/shm/kforge-persist").exists()
    assert 0x6B666F72 not in _host_sysv_keys()
    host.assert_untouched()  # the daemon holding the socket included (its environment names host.tmp)
