"""Every program a model wrote in the H200 loop benchmark (bench/loop_quality.sh: the loop's rounds and
the single-shot replies to KernelBench's own prompt, on eight unmodified KernelBench problems) is honest
code, so no static rule of the cuda target may reject it: those that did on the GPU (compiled kernels
cached by a helper's arguments, SM counts by device index, a PyTorch fallback method called only from a
branch) are bugs this test keeps fixed. Static checks only: the kernels need the GPU to run.
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


def test_every_benchmark_problem_has_candidates():
    assert {c.name.split(".")[0] for c in CANDIDATES} == set(REFERENCES)


@pytest.mark.parametrize("candidate", CANDIDATES, ids=[c.stem for c in CANDIDATES])
def test_no_static_rule_rejects_a_benchmark_candidate(candidate):
    results = static_checks.run(candidate.read_text(), REFERENCES[candidate.name.split(".")[0]],
                                CHECKS["allowed_torch_calls"], kernel_loops=CHECKS.get("kernel_loops", []),
                                kernel_modules=CHECKS.get("kernel_modules", []))
    failed = [f"{r['name']}: {r['message']}" for r in results if r["verdict"] == "fail"]
    assert not failed, "\n".join(failed)
