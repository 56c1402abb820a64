"""A platform is data: a copy of targets/cpu under another name, in a kforge home of its own, with only
its target.toml changed, is listed and evaluates a candidate without any change to kforge itself."""

import re
import shutil

import pytest

from e2e_support import ROOT


@pytest.fixture
def home(kforge):
    # Outside /tmp: the candidate sandbox puts a private tmpfs over /tmp, so a kforge home there would
    # be invisible to the candidate worker.
    path = ROOT / "build" / "test-homes" / kforge.tmp.name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_copied_target_folder_is_a_new_platform(kforge, home):
    for shared in ("worker", "prompts", ".venv"):  # kforge's own data, unchanged
        if (ROOT / shared).exists():
            (home / shared).symlink_to(ROOT / shared)
    new = home / "targets" / "hostcc"
    shutil.copytree(ROOT / "targets" / "cpu", new)
    toml = (new / "target.toml").read_text()
    assert 'name = "cpu"' in toml
    toml = toml.replace('name = "cpu"', 'name = "hostcc"')
    toml = re.sub(r"^description = .*$", 'description = "host C++ kernels, added as a folder"', toml, flags=re.M)
    (new / "target.toml").write_text(toml)
    kforge.env["KFORGE_HOME"] = str(home)

    listed = kforge.run("targets")
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()[1:] if line and not line.startswith(" ")]
    assert names == ["hostcc"]

    problem = ROOT / "examples" / "problems" / "01_relu.py"
    cand = ROOT / "examples" / "candidates" / "cpu" / "01_relu.py"
    proc, result = kforge.eval(problem, cand, "--target", "hostcc", "--no-compile-baseline", "--reps", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "correct" and result["target"] == "hostcc"

    unknown = kforge.run("eval", problem, cand, "--target", "cpu")
    assert unknown.returncode == 2 and "unknown target 'cpu' (known: hostcc)" in unknown.stderr
