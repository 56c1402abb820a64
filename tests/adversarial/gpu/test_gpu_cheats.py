"""GPU-only cheats (side streams, allocator reuse, patched CUDA events) on the cuda target.

Skipped, with the reason shown, where no CUDA device is visible. On a GPU machine:
    KFORGE_BIN=build/kforge .venv/bin/python -m pytest tests/adversarial/gpu -rs
"""

import pytest
import torch

from adversarial_support import HERE, problem

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: GPU-only cheats need one")

QUICK = ["--target", "cuda", "--no-compile-baseline", "--reps", "10", "--warmup", "1", "--seed", "7"]

# candidate -> (accepted statuses, checks of which at least one must have failed, or "mismatch")
GPU_CHEATS = {
    "side_stream_plain": ({"rejected"}, {"static.concurrency"}),
    "side_stream_hidden": ({"rejected", "incorrect"}, {"deferred_output", "mismatch"}),
    "allocator_reuse_plain": ({"incorrect"}, {"mismatch"}),
    "allocator_reuse_hidden": ({"incorrect"}, {"mismatch"}),
    "event_patch_plain": ({"rejected"}, {"static.monkey_patching", "monkey_patching"}),
    "event_patch_hidden": ({"rejected"}, {"monkey_patching", "timing_crosscheck"}),
}


@pytest.mark.parametrize("name", sorted(GPU_CHEATS))
def test_gpu_cheat_is_stopped(kforge, name):
    statuses, checks = GPU_CHEATS[name]
    proc, result = kforge.eval(problem("relu"), HERE / "gpu" / "cheats" / f"{name}.py", *QUICK)
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] in statuses, result.get("error")
    failed = {c["name"] for c in result["checks"] if c["verdict"] == "fail"}
    if result["status"] == "incorrect":
        failed.add(result["error"]["kind"])
    assert failed & checks, (failed, result.get("error"))
