"""The wgpu and hip targets through the real CLI, and `kforge targets`' readiness column.

wgpu runs for real on Mesa's lavapipe (Vulkan on the CPU): every bundled candidate is evaluated for
correctness inside the candidate sandbox. hip is built compile-only (hipcc --genco for gfx90a): this
machine has no AMD GPU."""

import re
import shutil
from pathlib import Path

import pytest

from e2e_support import ROOT, candidate

PROBLEMS = ROOT / "examples" / "problems"
WGPU = sorted((ROOT / "examples" / "candidates" / "wgpu").glob("*.py"))
HIP = sorted((ROOT / "examples" / "candidates" / "hip").glob("*.py"))
# lavapipe runs the compute-heavy problems at a few GFLOP/s on two cores: those are checked at a
# smaller size (the kernels handle any size; --shapes variants are covered by the cpu target's tests).
SMALLER = {"05_matmul": ["--set", "M=128"], "06_conv2d": ["--set", "batch_size=1"],
           "09_conv_relu_scale": ["--set", "batch_size=2"], "10_linear_softmax": ["--set", "batch_size=64"]}


def wgpu_ready(kforge) -> bool:
    return "runnable" in targets_row(kforge, "wgpu")


def targets_row(kforge, name: str) -> str:
    proc = kforge.run("targets")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for i, line in enumerate(lines):
        if line.split()[:1] == [name]:
            return line + "\n" + lines[i + 1]
    raise AssertionError(f"{name} not listed:\n{proc.stdout}")


@pytest.fixture
def wgpu(kforge):
    if not wgpu_ready(kforge):
        pytest.skip("wgpu target not runnable here (needs the wgpu package and a Vulkan driver: see `kforge targets`)")
    return kforge


@pytest.mark.parametrize("cand", WGPU, ids=[c.stem for c in WGPU])
def test_wgpu_candidate_is_correct_on_lavapipe(wgpu, cand):
    proc, result = wgpu.eval(PROBLEMS / cand.name, cand, "--target", "wgpu", "--no-compile-baseline", "--reps", "3",
                             *SMALLER.get(cand.stem, []))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "correct"
    assert result["env"]["isolation"] == "bubblewrap" or not shutil.which("bwrap")
    events = result["build"]["events"]
    assert events and all(e["path"] == "wgsl" and e["adapter"] for e in events)


def test_wgpu_single_shot_example_is_correct(wgpu):
    folder = ROOT / "targets" / "wgpu"
    proc, result = wgpu.eval(folder / "example_reference.py", folder / "example_candidate.py", "--target", "wgpu",
                             "--no-compile-baseline", "--reps", "3")
    assert result["status"] == "correct", proc.stdout + proc.stderr


def test_wgpu_shader_error_is_a_compile_error_with_the_line(wgpu):
    proc, result = wgpu.eval(PROBLEMS / "01_relu.py", candidate("wgsl_compile_error"), "--target", "wgpu",
                             "--no-compile-baseline")
    assert proc.returncode == 1
    assert result["status"] == "compile_error"
    assert "undeclared_zero" in result["error"]["log"]


def test_wrong_wgpu_shader_is_incorrect(wgpu):
    proc, result = wgpu.eval(PROBLEMS / "01_relu.py", candidate("wgsl_wrong"), "--target", "wgpu",
                             "--no-compile-baseline", "--set", "batch_size=4")
    assert proc.returncode == 1
    assert result["status"] == "incorrect", proc.stdout + proc.stderr


@pytest.fixture
def hip(kforge):
    if not shutil.which("hipcc"):
        pytest.skip("hipcc not installed (Debian package hipcc; scripts/setup.sh installs it)")
    return kforge


@pytest.mark.parametrize("cand", HIP, ids=[c.stem for c in HIP])
def test_hip_candidate_builds_a_gfx90a_code_object(hip, cand):
    proc, result = hip.eval(PROBLEMS / cand.name, cand, "--target", "hip", "--compile-only")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "compiled" and result["compile_only"] == "build"
    events = result["build"]["events"]
    assert events and all(e["path"] == "hip" and e["arch"] == "gfx90a" for e in events)


def test_hip_single_shot_example_builds(hip):
    folder = ROOT / "targets" / "hip"
    proc, result = hip.eval(folder / "example_reference.py", folder / "example_candidate.py", "--target", "hip",
                            "--compile-only")
    assert result["status"] == "compiled", proc.stdout + proc.stderr


def test_hip_compile_error_carries_hipccs_line(hip):
    proc, result = hip.eval(PROBLEMS / "01_relu.py", candidate("hip_compile_error"), "--target", "hip",
                            "--compile-only")
    assert proc.returncode == 1
    assert result["status"] == "compile_error"
    assert re.search(r"kernel\.hip:\d+:\d+: error: use of undeclared identifier 'undeclared_zero'", result["error"]["log"])


def test_targets_lists_every_target_with_its_readiness(kforge):
    proc = kforge.run("targets")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[1:] if line and not line.startswith(" ")}
    assert set(rows) >= {"cpu", "opencl", "cuda", "triton", "wgpu", "hip", "helion", "cute"}
    labels = ("runnable", "compile-only", "needs hardware", "not installed")
    assert all(any(label in row for label in labels) for row in rows.values()), proc.stdout
    assert "runnable" in rows["cpu"]
    if not Path("/dev/nvidiactl").exists():  # this machine (CI) has no NVIDIA GPU: cuda builds with NVRTC, triton runs its interpreter
        assert "compile-only" in rows["cuda"] and "compile-only" in rows["triton"]
        assert "no NVIDIA GPU here (/dev/nvidiactl absent)" in targets_row(kforge, "cuda")
    if shutil.which("hipcc") and not Path("/dev/kfd").exists():
        assert "compile-only" in rows["hip"]
    # cute is built in CI by a worker test, not by --compile-only; its reason line says so and why it
    # has not run on a GPU ([requires] note).
    if not Path("/dev/nvidiactl").exists():
        assert "needs hardware" in rows["cute"] or "not installed" in rows["cute"]
        assert "cute.compile runs at the first forward call" in targets_row(kforge, "cute")
