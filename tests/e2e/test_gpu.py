"""The cuda and triton targets on a real GPU. Skipped, with the reason, where the interpreter the
evaluations run under has no CUDA GPU (every CI machine): bench/gpu_check.sh runs them on one."""

import concurrent.futures
import json
import subprocess
import sys
import time

import pytest

from e2e_support import ROOT

PROBLEMS = ROOT / "examples" / "problems"
FAILURES = ROOT / "tests" / "gpu_failures"


def _gpu_reason():
    try:
        r = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot ask {sys.executable} for a GPU: {exc}"
    if r.stdout.strip() != "True":
        return f"no CUDA GPU: torch.cuda.is_available() is {r.stdout.strip() or r.stderr.strip()[-200:]} under {sys.executable}"
    return None


REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=REASON or "")]
QUICK = ["--python", sys.executable, "--no-compile-baseline", "--reps", "10"]


def test_fast_path_example_is_correct_and_timed(kforge):
    folder = ROOT / "targets" / "cuda"
    proc, result = kforge.eval(folder / "example_reference.py", folder / "example_candidate.py", "--target", "cuda",
                               *QUICK)
    assert result["status"] == "correct", proc.stdout + proc.stderr
    timer = result["timing"]["candidate_timer"]
    assert timer["timer"] == "cuda_events" and timer["l2_flush_bytes"] >= 2 * timer["l2_bytes"]
    assert result["timing"]["device_lock"]["path"].endswith(".lock")
    assert result["timing"]["device_state"]["samples"] > 0
    assert result["build"]["events"][0]["path"] == "cuda-nvrtc"


def test_triton_example_is_correct(kforge):
    folder = ROOT / "targets" / "triton"
    proc, result = kforge.eval(folder / "example_reference.py", folder / "example_candidate.py", "--target", "triton",
                               *QUICK)
    assert result["status"] == "correct", proc.stdout + proc.stderr
    assert result["speedup_vs_eager"] > 0


@pytest.mark.parametrize("name, status, kind", [
    ("illegal_address", "runtime_error", "illegal_memory_access"),
    ("kernel_trap", "runtime_error", "kernel_fault"),
])
def test_gpu_failure_is_named_and_the_next_evaluation_is_fine(kforge, name, status, kind):
    proc, result = kforge.eval(PROBLEMS / "01_relu.py", FAILURES / f"{name}.py", "--target", "cuda", *QUICK)
    assert result["status"] == status, proc.stdout + proc.stderr
    assert result["error"]["kind"] == kind, result["error"]
    proc, after = kforge.eval(PROBLEMS / "01_relu.py", ROOT / "examples" / "candidates" / "cuda" / "01_relu.py",
                              "--target", "cuda", *QUICK)
    assert after["status"] == "correct", proc.stdout + proc.stderr


def test_hung_kernel_is_killed_by_the_timeout(kforge):
    start = time.monotonic()
    proc, result = kforge.eval(PROBLEMS / "01_relu.py", FAILURES / "hang.py", "--target", "cuda", "--timeout", "5",
                               *QUICK)
    assert result["status"] == "timeout", proc.stdout + proc.stderr
    assert "GPU kernels" in result["error"]["message"]
    assert time.monotonic() - start < 90


def test_parallel_evaluations_take_turns_timing(kforge):
    cand = ROOT / "examples" / "candidates" / "cuda" / "01_relu.py"
    sizes = ["--set", "batch_size=2048", "--set", "dim=8192"]

    def one(i):
        out = kforge.tmp / f"parallel-{i}.json"
        proc = kforge.run("eval", PROBLEMS / "01_relu.py", cand, "--target", "cuda", *QUICK, *sizes, "--json", out)
        return proc, json.loads(out.read_text()) if out.exists() else {}

    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        results = list(pool.map(one, range(3)))
    assert all(r.get("status") == "correct" for _, r in results), [p.stdout + p.stderr for p, _ in results]
    assert len({r["timing"]["device_lock"]["path"] for _, r in results}) == 1
