"""A platform is data: a copy of targets/cpu under another name, in a kforge home of its own, with only
its target.toml changed, is listed and evaluates a candidate without any change to kforge itself,
including a cache folder of its own (shared for the reference, private for the candidate)."""

import re
import shutil
from pathlib import Path

from e2e_support import ROOT


SHARED_CACHE_CHECK = """import os
_shared = os.path.join(os.path.dirname(os.environ["KFORGE_BUILD_CACHE"]), "hostcc", "kernels")
if os.environ.get("HOSTCC_CACHE_DIR") != _shared:
    raise RuntimeError(f"reference: HOSTCC_CACHE_DIR={os.environ.get('HOSTCC_CACHE_DIR')}, expected {_shared}")
"""
PRIVATE_CACHE_CHECK = """import os
_own = os.environ.get("HOSTCC_CACHE_DIR", "")
if not _own.endswith("/hostcc/kernels") or _own.startswith(os.path.dirname(os.environ["KFORGE_BUILD_CACHE"])):
    raise RuntimeError(f"candidate: HOSTCC_CACHE_DIR={_own} is not a private folder")
"""


def test_a_copied_target_folder_is_a_new_platform(kforge, home):
    # kforge's own data, unchanged (the home fixture, e2e_support.py).
    new = home / "targets" / "hostcc"
    shutil.copytree(ROOT / "targets" / "cpu", new)
    toml = (new / "target.toml").read_text()
    assert 'name = "cpu"' in toml
    toml = toml.replace('name = "cpu"', 'name = "hostcc"')
    toml = re.sub(r"^description = .*$", 'description = "host C++ kernels, added as a folder"', toml, flags=re.M)
    toml += '\n[caches]\nHOSTCC_CACHE_DIR = "hostcc/kernels"\n'
    (new / "target.toml").write_text(toml)

    listed = kforge.run("targets")
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()[1:] if line and not line.startswith(" ")]
    assert names == ["hostcc"]

    # The reference (trusted, the problem file) sees the shared cache folder, or refuses to load.
    problem = kforge.tmp / "01_relu.py"
    problem.write_text(SHARED_CACHE_CHECK + (ROOT / "examples" / "problems" / "01_relu.py").read_text())
    cand = ROOT / "examples" / "candidates" / "cpu" / "01_relu.py"
    proc, result = kforge.eval(problem, cand, "--target", "hostcc", "--no-compile-baseline", "--reps", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "correct" and result["target"] == "hostcc"
    assert (Path(kforge.env["KFORGE_CACHE_DIR"]) / "hostcc" / "kernels").is_dir()
    # A candidate may not look at its environment (its cache folder included): a kernel that can tell
    # where it runs can behave differently outside kforge (static.environment_probe).
    probing = kforge.tmp / "relu_cpu.py"
    probing.write_text(PRIVATE_CACHE_CHECK + cand.read_text())
    proc, result = kforge.eval(problem, probing, "--target", "hostcc", "--no-compile-baseline", "--reps", "3")
    assert result["status"] == "rejected", proc.stdout + proc.stderr
    assert any(c["name"] == "static.environment_probe" and c["verdict"] == "fail" for c in result["checks"])

    unknown = kforge.run("eval", problem, cand, "--target", "cpu")
    assert unknown.returncode == 2 and "unknown target 'cpu' (known: hostcc)" in unknown.stderr


def test_a_target_whose_cache_leaves_the_cache_directory_is_refused(kforge, home):
    bad = home / "targets" / "escape"
    shutil.copytree(ROOT / "targets" / "cpu", bad)
    toml = (bad / "target.toml").read_text().replace('name = "cpu"', 'name = "escape"')
    (bad / "target.toml").write_text(toml + '\n[caches]\nESCAPE_CACHE_DIR = "../../home/user/.cache"\n')
    proc = kforge.run("targets")
    assert proc.returncode == 2
    assert 'caches.ESCAPE_CACHE_DIR = "../../home/user/.cache" leaves the cache directory (..)' in proc.stderr
