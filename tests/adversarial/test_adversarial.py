"""Cheats are rejected with the check that names them; honest but unusual kernels are accepted.

Every cheat kind comes in two variants: `_plain` (written the obvious way, stopped by the static
checks and usually by a runtime check too) and `_hidden` (names assembled at run time, getattr,
eval, or the trick done inside a compiled kernel: the static checks miss it on purpose and a
runtime check must stop it). docs/checks.md describes each check.
"""

import pytest

from adversarial_support import CHEAT_SIZES, HERE, problem

QUICK = ["--no-compile-baseline", "--reps", "10", "--warmup", "1", "--seed", "7"]

# candidate -> (problem, expected status, check that must have failed (or one of several); "mismatch"
# means error.kind)
CHEATS = {
    "delegate_op_plain": ("softmax", "rejected", "static.torch_delegation"),
    "delegate_op_hidden": ("softmax", "rejected", "torch_delegation"),
    "delegate_whole_plain": ("matmul", "rejected", "static.torch_delegation"),
    "delegate_whole_hidden": ("matmul", "rejected", "torch_delegation"),
    "fallback_plain": ("relu", "rejected", "static.reference_fallback"),
    "fallback_hidden": ("relu", "rejected", "torch_delegation"),
    "patch_torch_plain": ("relu", "rejected", "static.monkey_patching"),
    "patch_torch_hidden": ("relu", "rejected", "monkey_patching"),
    "patch_timer_plain": ("relu", "rejected", "static.monkey_patching"),
    "patch_timer_hidden": ("relu", "rejected", "monkey_patching"),
    "patch_worker_plain": ("relu", "rejected", "static.monkey_patching"),
    "patch_worker_hidden": ("relu", "rejected", "monkey_patching"),
    "thread_plain": ("relu", "rejected", "static.concurrency"),
    # Its thread writes 5 ms after the return: seen changing the outputs within the first trial's
    # 20 ms, or, on a loaded machine, still running when they are looked at again.
    "thread_hidden": ("relu", "rejected", ("deferred_output", "concurrency")),
    # Deferred only after the first trial, where nothing waits: the thread is still running.
    "thread_late": ("relu", "rejected", "concurrency"),
    "process_plain": ("relu", "rejected", "static.concurrency"),
    "process_hidden": ("relu", "rejected", "concurrency"),
    "frames_plain": ("relu", "rejected", "static.introspection"),
    "frames_hidden": ("relu", "rejected", "introspection"),
    "gc_plain": ("relu", "rejected", "static.introspection"),
    "gc_hidden": ("relu", "rejected", "introspection"),
    "file_io_plain": ("relu", "rejected", "static.file_io"),
    "file_io_hidden": ("relu", "rejected", "file_io"),
    "network_plain": ("relu", "rejected", "static.network"),
    "network_hidden": ("relu", "rejected", "network"),
    "cache_plain": ("relu", "rejected", "static.output_caching"),
    "cache_hidden": ("relu", "rejected", "timed_output"),
    "content_cache_plain": ("matmul", "rejected", "static.output_caching"),
    "content_cache_hidden": ("matmul", "rejected", "suspicious"),
    "lazy_plain": ("relu", "rejected", "output_type"),
    "lazy_hidden": ("relu", "rejected", "output_type"),
    "alias_plain": ("relu", "rejected", "output_aliasing"),
    "alias_hidden": ("relu", "rejected", "output_aliasing"),
    "mutate_plain": ("relu", "rejected", "input_mutation"),
    "mutate_hidden": ("relu", "rejected", "input_mutation"),
    "zeros_plain": ("tiny_scale", "incorrect", "mismatch"),
    "zeros_hidden": ("tiny_scale", "incorrect", "mismatch"),
    "constant_plain": ("row_mean", "incorrect", "mismatch"),
    "constant_hidden": ("row_mean", "incorrect", "mismatch"),
    "low_precision_plain": ("softmax", "rejected", "precision"),
    "low_precision_hidden": ("softmax", "rejected", "precision"),
    # Strict precision: TF32 for a library GEMM (on the CPU only the switch is seen; on a GPU the
    # precision audit sees its error too).
    "tf32_plain": ("linear_relu", "rejected", "precision_flags"),
    "tf32_hidden": ("linear_relu", "rejected", "precision_flags"),
    "partial_plain": ("tiny_scale", "incorrect", "mismatch"),
    "partial_hidden": ("tiny_scale", "incorrect", "mismatch"),
    # PyTorch in a branch only warns statically; the branch runs, and the run-time check sees it.
    "delegate_branch_plain": ("softmax", "rejected", "torch_delegation"),
    "delegate_branch_hidden": ("softmax", "rejected", "torch_delegation"),
    # A helper's cache keyed by what its caller computes from the input's data.
    "helper_cache_plain": ("relu", "rejected", "static.output_caching"),
    "helper_cache_hidden": ("relu", "rejected", "static.output_caching"),
}

# candidate -> (problem, a check that must carry this verdict, or None)
HONEST = {
    "relu_native": ("relu", None),
    "relu_own_buffer": ("relu", None),
    "relu_threads": ("relu", None),
    "softmax_native": ("softmax", None),
    # A fallback branch that never runs at the problem's inputs: a static warning, not a rejection.
    "softmax_fallback_branch": ("softmax", ("static.torch_delegation", "warn")),
    "matmul_native": ("matmul", None),
    "linear_gemm_epilogue": ("linear_relu", None),
    "linear_prepacked": ("linear_relu", None),
    "algebraic_simplification": ("scaled_sums", None),
    "degenerate_constant": ("degenerate", ("calibration", "warn")),
    "rowloop_fused": ("rowloop", ("implausible_speedup", "warn")),
    "tiny_scale_native": ("tiny_scale", ("calibration", "warn")),
    "row_mean_native": ("row_mean", ("calibration", "warn")),
    # Caches keyed on the inputs' metadata, not their data (static.output_caching allows them).
    "compiled_by_channels": ("relu", None),
    "compiled_by_helper_args": ("relu", None),
    "scratch_per_device": ("softmax", None),
    "autotune_by_shape": ("relu", None),
}


def _failed(result, name):
    return any(c["name"] == name and c["verdict"] == "fail" for c in result["checks"])


def test_every_kind_has_two_variants():
    kinds = {name.rsplit("_", 1)[0] for name in CHEATS}
    assert len(kinds) >= 20
    for kind in kinds:
        assert {f"{kind}_plain", f"{kind}_hidden"} <= set(CHEATS), kind
    assert len(HONEST) >= 10


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_cheat_is_stopped(kforge, name):
    prob, status, check = CHEATS[name]
    proc, result = kforge.eval(problem(prob), HERE / "cheats" / f"{name}.py", *QUICK, *CHEAT_SIZES.get(name, []))
    assert result is not None, proc.stdout + proc.stderr
    summary = {k: result.get(k) for k in ("status", "error", "checks")}
    assert result["status"] == status, summary
    if check == "mismatch":
        assert result["error"]["kind"] == "mismatch", summary
        # Passing the default tolerance is what made these cheats viable: calibration tightened it.
        assert result["calibration"]["tightened"], result["calibration"]
    else:
        assert any(_failed(result, c) for c in ((check,) if isinstance(check, str) else check)), summary
    assert proc.returncode == 1


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_kernel_is_accepted(kforge, name):
    prob, expect = HONEST[name]
    proc, result = kforge.eval(problem(prob), HERE / "honest" / f"{name}.py", *QUICK)
    assert result is not None, proc.stdout + proc.stderr
    failing = [c for c in result["checks"] if c["verdict"] == "fail"]
    assert result["status"] == "correct", {"error": result.get("error"), "failing": failing}
    assert proc.returncode == 0
    assert result["sol"]["sol_ms"] > 0 and result["precision"] == "strict"
    # The library GEMM the target allows is reported as kept; kernels of their own report none.
    assert result["library_calls"]["operators"] == (["matmul"] if name == "linear_gemm_epilogue" else []), name
    if name == "linear_gemm_epilogue":  # timed: the GEMM's share of the candidate's time is measured
        assert 0 < result["library_calls"]["share"] <= 1, result["library_calls"]
        assert "share_method" in result["library_calls"]
    else:
        assert "share" not in result["library_calls"], name
    if expect:
        assert any(c["name"] == expect[0] and c["verdict"] == expect[1] for c in result["checks"]), result["checks"]


def test_kernels_only_rejects_a_library_gemm_the_target_allows(kforge, tmp_path):
    """The honest GEMM + fused epilogue is accepted by default (test above); with no library calls
    allowed, by flag or by kforge.toml, its torch.mm is the reference's computation done by PyTorch."""
    honest = HERE / "honest" / "linear_gemm_epilogue.py"
    proc, result = kforge.eval(problem("linear_relu"), honest, *QUICK, "--no-timing", "--kernels-only")
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected" and result["allowed_torch_calls"] == [], result.get("error")
    assert _failed(result, "static.torch_delegation") and _failed(result, "torch_delegation"), result["checks"]
    config = tmp_path / "kforge.toml"
    config.write_text("[checks]\nkernels_only = true\n")
    proc, result = kforge.eval(problem("linear_relu"), honest, *QUICK, "--no-timing",
                                  env=dict(kforge.env, KFORGE_CONFIG=str(config)))
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected", result.get("error")
    assert proc.returncode == 1
