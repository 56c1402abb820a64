"""What the end-to-end tests share: the built `kforge` binary, run as a user would, and the fixture files.

A module of its own (not conftest.py): the adversarial suite has a conftest.py too, and tests that
imported `conftest` got whichever was loaded first."""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def kforge_binary() -> Path:
    return Path(os.environ.get("KFORGE_BIN", ROOT / "build" / "kforge"))


class Kforge:
    def __init__(self, binary: Path, tmp: Path):
        self.binary = binary
        self.tmp = tmp
        self.env = dict(os.environ)
        # One compile cache for the whole test run; state (store, logs) private to each test.
        self.env.setdefault("KFORGE_CACHE_DIR", str(ROOT / "build" / "test-cache"))
        self.env["KFORGE_STATE_DIR"] = str(tmp / "state")
        self.env.pop("KFORGE_CONFIG", None)

    def run(self, *args, timeout=600, env=None):
        return subprocess.run([str(self.binary), *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, env=env or self.env, cwd=self.tmp)

    def eval(self, problem, candidate, *extra, timeout=600, env=None):
        out = self.tmp / f"result-{Path(candidate).stem}.json"
        proc = self.run("eval", problem, candidate, "--json", out, *extra, timeout=timeout, env=env)
        result = json.loads(out.read_text()) if out.exists() else None
        return proc, result


# Fixtures: each suite's conftest.py imports them, so both suites run kforge the same way.
@pytest.fixture(scope="session")
def kforge_bin():
    binary = kforge_binary()
    if not binary.exists():
        pytest.fail(f"{binary} not built: run scripts/setup.sh first")
    return binary


@pytest.fixture
def kforge(kforge_bin, tmp_path):
    return Kforge(kforge_bin, tmp_path)


@pytest.fixture
def home(kforge):
    """A kforge home of the test's own (KFORGE_HOME), with kforge's worker and prompts and an empty
    targets/ for the test to fill. Outside /tmp: the candidate sandbox puts a private tmpfs over
    /tmp, so a home there would be invisible to the candidate worker. The worker package is copied,
    not linked: the sandbox binds the home's worker folder itself and shows nothing a link inside it
    could point to."""
    path = ROOT / "build" / "test-homes" / kforge.tmp.name
    shutil.rmtree(path, ignore_errors=True)
    (path / "targets").mkdir(parents=True)
    shutil.copytree(ROOT / "worker", path / "worker", ignore=shutil.ignore_patterns("__pycache__", "tests"))
    for shared in ("prompts", ".venv"):
        if (ROOT / shared).exists():
            (path / shared).symlink_to(ROOT / shared)
    kforge.env["KFORGE_HOME"] = str(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def problem(name: str) -> Path:
    return HERE / "problems" / f"{name}.py"


def candidate(name: str) -> Path:
    return HERE / "candidates" / f"{name}.py"


def cpu_candidates_without(*names: str) -> Path:
    """The bundled cpu candidates less NAMES, for benches that need a problem without a candidate. The
    folder is named by its content, so every pytest-xdist worker (and every test) gets the same path."""
    files = sorted(p for p in (ROOT / "examples" / "candidates" / "cpu").glob("*.py") if p.stem not in names)
    digest = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in files)).hexdigest()[:12]
    folder = ROOT / "build" / f"test-cpu-candidates-{digest}"
    if not folder.exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=folder.parent, prefix=folder.name + "."))
        for p in files:
            shutil.copy(p, staging / p.name)
        try:
            staging.rename(folder)
        except OSError:  # another worker made it first
            shutil.rmtree(staging)
    return folder


def stray_processes(marker: str) -> list:
    out = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]
