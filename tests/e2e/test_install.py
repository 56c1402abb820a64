"""The Debian package, installed as a user would: built by CPack from the build tree, unpacked into a
clean root, its worker environment made by the installed setup-worker.sh, then `kforge` run from
that root with a fresh home. Also where the per-user directories go (XDG base directories, and the
~/.kforge of earlier versions kept in use)."""

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from e2e_support import ROOT, kforge_binary


def _build_dir() -> Path:
    return kforge_binary().resolve().parent


def _run(argv, env, timeout=600, cwd=None):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)


def _installed_names() -> set:
    """Installed packages and the virtual packages they provide (libspdlog1.10 provides libspdlog1.10-fmt9)."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${Package} ${Provides}\\n"],
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        status, _, rest = line.partition(" ")
        if not status.startswith("ii"):
            continue
        package, _, provides = rest.strip().partition(" ")
        names.add(package)
        names.update(p.strip().split(" ")[0] for p in provides.split(",") if p.strip())
    return names


@pytest.fixture(scope="module")
def installed_root(tmp_path_factory):
    """kforge's .deb, built by CPack and unpacked into an empty directory."""
    for tool in ("cpack", "dpkg-deb"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} not found: the .deb needs CMake's cpack and dpkg")
    config = _build_dir() / "CPackConfig.cmake"
    if not config.exists():
        pytest.fail(f"{config} missing: configure the build again (cmake -S . -B {_build_dir()})")
    tmp = tmp_path_factory.mktemp("deb")
    built = _run(["cpack", "-G", "DEB", "--config", config, "-B", tmp / "pkg"], dict(os.environ), timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    debs = list((tmp / "pkg").glob("kforge_*.deb"))
    assert len(debs) == 1, built.stdout

    # What the package asks for is present here, so the unpacked files see what an installed
    # package would (dpkg checks this at install time; `dpkg -x` does not).
    depends = _run(["dpkg-deb", "-f", debs[0], "Depends"], dict(os.environ)).stdout
    installed = _installed_names()
    for clause in depends.split(","):
        names = [alt.strip().split(" ")[0].split(":")[0] for alt in clause.split("|")]
        assert any(n in installed for n in names), f"dependency {clause.strip()} of the .deb is not installed"
    contents = _run(["dpkg-deb", "-c", debs[0]], dict(os.environ)).stdout
    for path in ("./usr/bin/kforge", "./usr/share/kforge/worker/kforge_worker/__main__.py",
                 "./usr/share/kforge/worker/kforge_kernels/native.py",
                 "./usr/share/kforge/targets/cpu/target.toml", "./usr/share/kforge/prompts/generate.user.mustache",
                 "./usr/share/kforge/examples/kforge.toml", "./usr/share/kforge/setup-worker.sh",
                 "./usr/share/doc/kforge/README.md", "./usr/share/doc/kforge/config.md",
                 "./usr/share/man/man1/kforge.1", "./usr/share/bash-completion/completions/kforge",
                 "./usr/share/zsh/vendor-completions/_kforge"):
        assert path in contents, f"{path} not in the package"
    root = tmp / "root"
    unpacked = _run(["dpkg", "-x", debs[0], root], dict(os.environ))
    assert unpacked.returncode == 0, unpacked.stderr
    return root


def _user_env(home: Path) -> dict:
    """A fresh user: nothing of this test run's kforge settings, nothing of the build tree."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KFORGE_", "XDG_")) and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(home)
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    home.mkdir(parents=True, exist_ok=True)
    return env


def _store_named_by(proc) -> str:
    """`kforge report 999` on an empty store names the store it opened."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    return proc.stderr.split(" in ", 1)[1].strip()


def test_deb_installs_sets_up_its_worker_and_evaluates(installed_root, tmp_path):
    kforge = installed_root / "usr/bin/kforge"
    share = installed_root / "usr/share/kforge"
    home = tmp_path / "home"
    env = _user_env(home)
    # Peaks (speed of light) are measured once per machine; reuse this run's rather than measure
    # them again on a loaded CI machine (a cache directory kforge owns, so a copy is fair).
    test_cache = Path(os.environ.get("KFORGE_CACHE_DIR", ROOT / "build" / "test-cache"))
    if (test_cache / "peaks").is_dir():
        shutil.copytree(test_cache / "peaks", home / ".cache/kforge/peaks")

    # The worker environment, made as the README tells users to. The build's .venv is layered
    # under it (a .pth file), so pip finds PyTorch installed instead of downloading gigabytes;
    # the interpreter kforge then runs is the new venv's, and it must import torch. The layer is named by
    # its real path: the candidate sandbox shows folders where they really are, not through a link
    # (a checkout whose .venv links to a shared environment).
    setup = _run(["bash", share / "setup-worker.sh", "--layer-on", (ROOT / ".venv").resolve()], env, timeout=600)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    venv_python = home / ".local/share/kforge/venv/bin/python"
    assert venv_python.exists()
    torch = _run([venv_python, "-c", "import torch; print(torch.__version__)"], env)
    assert torch.returncode == 0, torch.stderr

    targets = _run([kforge, "targets"], env, cwd=home)
    assert targets.returncode == 0, targets.stderr
    assert "cpu" in targets.stdout and "cuda" in targets.stdout

    doctor = _run([kforge, "doctor"], env, cwd=home, timeout=300)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "kforge is ready" in doctor.stdout and str(venv_python) in doctor.stdout

    # The man page and completions the package installs are the ones its binary generates.
    for path, args in [("usr/share/man/man1/kforge.1", ["man"]),
                       ("usr/share/bash-completion/completions/kforge", ["completion", "bash"]),
                       ("usr/share/zsh/vendor-completions/_kforge", ["completion", "zsh"])]:
        assert (installed_root / path).read_text() == _run([kforge, *args], env).stdout, path

    out = tmp_path / "result.json"
    proc = _run([kforge, "eval", share / "examples/problems/12_swish.py", share / "examples/candidates/cpu/12_swish.py",
                 "--target", "cpu", "--no-compile-baseline", "--reps", "5", "--json", out], env, cwd=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    assert result["status"] == "correct"
    assert result["env"]["python"] == str(venv_python)
    assert result["env"]["torch"] == torch.stdout.strip()
    # What produced the figure, for anyone reading the JSON later.
    version = _run([kforge, "--version"], env).stdout.split()[-1]
    assert result["env"]["kforge_version"] == version
    assert result["env"]["command_line"][1:3] == ["eval", str(share / "examples/problems/12_swish.py")]
    assert result["env"]["python_version"] == _run([venv_python, "-c", "import platform; print(platform.python_version())"],
                                                   env).stdout.strip()
    assert result["env"]["host"]["cpu"] and result["env"]["host"]["cpus"] >= 1
    # Per-user directories on a fresh home: XDG defaults.
    db = home / ".local/share/kforge/kforge.db"
    assert result["store"]["path"] == str(db)
    with sqlite3.connect(db) as c:
        assert c.execute("select count(*) from evaluations").fetchone()[0] == 1
    assert (home / ".cache/kforge/build").is_dir()
    assert not (home / ".kforge").exists()

    # A home that already has ~/.kforge (an earlier version's store) keeps using it, even though the
    # XDG data directory exists now: nothing is orphaned.
    (home / ".kforge").mkdir()
    shutil.move(db, home / ".kforge/kforge.db")
    assert _store_named_by(_run([kforge, "report", "999"], env, cwd=home)) == str(home / ".kforge/kforge.db")


def test_xdg_variables_choose_the_directories(installed_root, tmp_path):
    kforge = installed_root / "usr/bin/kforge"
    home = tmp_path / "home"
    env = _user_env(home)
    assert _store_named_by(_run([kforge, "report", "999"], env, cwd=home)) == str(home / ".local/share/kforge/kforge.db")
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    assert _store_named_by(_run([kforge, "report", "999"], env, cwd=home)) == str(tmp_path / "data/kforge/kforge.db")
    # The config file is found under XDG_CONFIG_HOME, and its store.path is used.
    (tmp_path / "config/kforge").mkdir(parents=True)
    (tmp_path / "config/kforge/kforge.toml").write_text(f'[store]\npath = "{tmp_path}/chosen.db"\n')
    assert _store_named_by(_run([kforge, "report", "999"], env, cwd=home)) == str(tmp_path / "chosen.db")


def test_an_installed_copy_names_its_own_setup_script(installed_root, tmp_path):
    """Without a worker environment, `doctor` and `eval` of an installed copy say to run the
    setup-worker.sh it installed, not the build tree's scripts/setup.sh, which it lacks."""
    kforge = installed_root / "usr/bin/kforge"
    share = installed_root / "usr/share/kforge"
    home = tmp_path / "home"
    env = _user_env(home)
    assert not (share / "scripts").exists()
    python = tmp_path / "python3-without-torch"  # the system's interpreter, its site-packages hidden
    python.write_text('#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n')
    python.chmod(0o755)
    setup = str(share / "setup-worker.sh")

    doctor = _run([kforge, "doctor", "--python", python], env, cwd=home, timeout=300)
    assert doctor.returncode != 0, doctor.stdout
    assert f"run {setup}, which makes {home / '.local/share/kforge/venv'} with torch" in doctor.stdout, doctor.stdout
    assert "scripts/setup.sh" not in doctor.stdout + doctor.stderr

    proc = _run([kforge, "eval", share / "examples/problems/01_relu.py", share / "examples/candidates/cpu/01_relu.py",
                 "--target", "cpu", "--python", python], env, cwd=home)
    assert proc.returncode != 0 and "cannot import torch" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert f"({setup} does)" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert "scripts/setup.sh" not in proc.stdout + proc.stderr
