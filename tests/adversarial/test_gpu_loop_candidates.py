"""Every program a model wrote in the H200 loop benchmark (bench/loop_quality.sh: the loop's rounds and
the single-shot replies to KernelBench's own prompt, on eight unmodified KernelBench problems) is honest
code, so no static rule of the cuda target may reject it: those that did on the GPU (compiled kernels
cached by a helper's arguments, SM counts by device index, a PyTorch fallback method called only from a
branch) are bugs this test keeps fixed. The exceptions are named in DELIBERATE: programs that broke a rule
kept on purpose, whose message the model then followed in its next program. Static checks only: the
kernels need the GPU to run.
`bench/loop_quality_report.py candidates STATE tests/adversarial/gpu_loop/candidates` refreshes them."""

import sys
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "worker"))
sys.path.insert(0, str(HERE / "gpu_loop"))
from kforge_worker.checks import static_checks  # noqa: E402
from references import REFERENCES  # noqa: E402

CANDIDATES = sorted((HERE / "gpu_loop" / "candidates").glob("*.py"))
CHECKS = tomllib.loads((ROOT / "targets" / "cuda" / "target.toml").read_text())["checks"]
# Rules that stay although a model's program met them (docs/checks.md says why of each):
DELIBERATE = {
    # Saves, sets and restores TORCH_CUDA_ARCH_LIST around load_inline. kforge's worker sets that
    # variable when the user has not, so reading it tells kforge's sandbox from a user's machine;
    # load_inline's own detection picks the device's architecture (the next program, c3).
    "23_Softmax.c2": {"static.environment_probe", "static.monkey_patching"},
    # getattr(module, "colsum_v%d_k%d" % (V, K)): a name built at run time. c4, a fix of c3's crash,
    # kept it (its request named only the crash); c5 spells each kernel's name out.
    "47_Sum_reduction_over_a_dimension.c3": {"static.dynamic_code"},
    "47_Sum_reduction_over_a_dimension.c4": {"static.dynamic_code"},
}


def test_every_benchmark_problem_has_candidates():
    assert {c.name.split(".")[0] for c in CANDIDATES} == set(REFERENCES)


@pytest.mark.parametrize("candidate", CANDIDATES, ids=[c.stem for c in CANDIDATES])
def test_no_static_rule_rejects_a_benchmark_candidate(candidate):
    results = static_checks.run(candidate.read_text(), REFERENCES[candidate.name.split(".")[0]],
                                CHECKS["allowed_torch_calls"], kernel_loops=CHECKS.get("kernel_loops", []),
                                kernel_modules=CHECKS.get("kernel_modules", []))
    failed = {r["name"]: r["message"] for r in results if r["verdict"] == "fail"}
    assert set(failed) == DELIBERATE.get(candidate.stem, set()), "\n".join(f"{k}: {v}" for k, v in failed.items())
