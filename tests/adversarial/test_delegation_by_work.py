"""Delegation judged by work, not names (tests/adversarial/delegation/): a library call the target
allows is allowed only for work of the kind the reference does with a library call (a GEMM, a
convolution), and for no more of it than the reference does; any other PyTorch computation in forward
is delegation, whatever its name. Torch work hidden from the operator recorder (threads, the dispatch
keys switched off) is refused. docs/checks.md, "What counts as delegation".
"""

import pytest

from adversarial_support import HERE, problem
from e2e_support import stray_processes

ATTACKS_DIR = HERE / "delegation"
QUICK = ["--no-compile-baseline", "--reps", "10", "--warmup", "1", "--seed", "7", "--no-timing"]

# attack -> (problem, status, the runtime check that must fail, the static check that must fail or None,
#            words the runtime check's message must contain)
ATTACKS = {
    # Allowed library calls used for work of a kind the reference does not do with them.
    "matmul_as_conv": ("matmul", "rejected", "torch_delegation", "static.torch_delegation", "convolution"),
    "sum_as_matmul": ("scaled_sums", "rejected", "torch_delegation", "static.torch_delegation", "GEMM"),
    # The right kind, but more of it than the reference does.
    "gemm_beyond_reference": ("small_gemm_big_sum", "rejected", "torch_delegation", None, "FLOPs"),
    # Library computations of other names than the reference's.
    "library_gelu": ("new_gelu", "rejected", "torch_delegation", "static.torch_delegation", "gelu"),
    "softmax_by_log_softmax": ("softmax", "rejected", "torch_delegation", "static.torch_delegation", "log_softmax"),
    "mean_by_nansum": ("row_mean", "rejected", "torch_delegation", "static.torch_delegation", "nansum"),
    "relu_by_comparison": ("relu", "rejected", "torch_delegation", None, "gt"),
    # Torch work the recorder cannot see: the Python dispatch key switched off, or another thread.
    "excluded_python_key": ("softmax", "rejected", "introspection", "static.introspection", "ExcludeDispatchKeyGuard"),
    "tls_key_excluded": ("softmax", "rejected", "introspection", "static.introspection", "dispatch_key_excluded"),
    "no_dispatch_alias": ("softmax", "rejected", "introspection", "static.introspection", "DisableTorchDispatch"),
    "thread_at_import_plain": ("softmax", "rejected", "concurrency", None, "prefetch"),
    # A custom operator with a Python kernel: torch runs it below the recorder.
    "custom_op_kernel": ("softmax", "rejected", "torch_delegation", None, "kforge_attack::rows"),
    "thread_joined_in_forward": ("softmax", "rejected", "concurrency", "static.concurrency", "thread"),
}

# honest candidate (tests/adversarial/honest/) -> (problem, the library calls it keeps)
HONEST = {
    "gemm_then_own_sums": ("small_gemm_big_sum", ["matmul"]),
    "conv_own_relu": ("conv_relu", ["conv"]),
    "linear_gemm_epilogue": ("linear_relu", ["matmul"]),
    "matmul_native": ("matmul", []),
    "algebraic_simplification": ("scaled_sums", []),
}


def _finding(result, name):
    return next((c for c in result["checks"] if c["name"] == name and c["verdict"] == "fail"), None)


def _summary(result):
    return {k: result.get(k) for k in ("status", "error", "checks")}


def test_every_attack_file_is_listed():
    assert {p.stem for p in ATTACKS_DIR.glob("*.py")} == set(ATTACKS)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_delegation_is_stopped(kforge, name):
    prob, status, check, static, words = ATTACKS[name]
    proc, result = kforge.eval(problem(prob), ATTACKS_DIR / f"{name}.py", *QUICK)
    assert result is not None, proc.stdout + proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert result["status"] == status, _summary(result)
    found = _finding(result, check)
    assert found is not None, _summary(result)
    assert words in found["message"], found
    assert result["error"]["kind"] == check, _summary(result)
    if static is not None:
        assert _finding(result, static) is not None, _summary(result)
    assert stray_processes(str(kforge.tmp)) == []


@pytest.mark.parametrize("name", sorted(HONEST))
def test_library_work_of_the_references_kind_is_accepted(kforge, name):
    prob, kept = HONEST[name]
    proc, result = kforge.eval(problem(prob), HERE / "honest" / f"{name}.py", *QUICK)
    assert result is not None, proc.stdout + proc.stderr
    failing = [c for c in result["checks"] if c["verdict"] != "pass"]
    assert result["status"] == "correct", {"error": result.get("error"), "not passing": failing}
    assert not any(c["name"].endswith("torch_delegation") and c["verdict"] != "pass" for c in result["checks"]), failing
    assert result["library_calls"]["operators"] == kept, result["library_calls"]
    assert proc.returncode == 0
