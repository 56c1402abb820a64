"""The cuda versions of the forged-verdict attacks (tests/adversarial/forged_gpu/), which
bench/adversarial_gpu.sh runs on a GPU machine. Here, without a GPU: every attack file has a line in
the script's table of expectations, each attack's only fault is the attack (its kernel is a CUDA
kernel of its own, so the delegation check does not decide), and its kernels build (NVRTC, compile
only).
"""

import json
import re
import sys

import pytest

from adversarial_support import HERE, problem

ROOT = HERE.parents[1]
FORGED_GPU = HERE / "forged_gpu"
SCRIPT = ROOT / "bench" / "adversarial_gpu.sh"
CUDA_ALLOWED = ["matmul", "mm", "addmm", "bmm", "linear", "conv2d"]  # targets/cuda/target.toml [checks]


def _expectations():
    """file -> (problem, status, error kind, reps), from the script's marked table."""
    text = SCRIPT.read_text()
    table = re.search(r"^EXPECTATIONS='\n(.*?)^'$", text, re.S | re.M)
    assert table, "bench/adversarial_gpu.sh has no EXPECTATIONS='...' table"
    rows = [line.split() for line in table.group(1).splitlines() if line.strip()]
    assert all(len(r) == 5 for r in rows), rows
    return {r[0]: tuple(r[1:]) for r in rows}


def test_every_gpu_attack_has_an_expectation_and_every_expectation_a_file():
    table = _expectations()
    assert {f"forged_gpu/{p.name}" for p in FORGED_GPU.glob("*.py")} <= set(table)
    for file, (prob, status, kind, reps) in table.items():
        assert (HERE / file).is_file(), file
        assert problem(prob).is_file(), prob
        assert status in {"rejected", "incorrect"} and int(reps) > 0, (file, status, reps)


def test_every_gpu_attack_says_what_it_attacks_and_what_stops_it():
    table = _expectations()
    for path in sorted(FORGED_GPU.glob("*.py")):
        doc = path.read_text().split('"""')[1]
        prob, status, kind, reps = table[f"forged_gpu/{path.name}"]
        assert doc.startswith("Attack (cuda target)"), path.name
        assert f"`{kind}`" in doc, (path.name, kind)  # the check the script expects is the one it names


@pytest.mark.parametrize("name", sorted(p.stem for p in FORGED_GPU.glob("*.py")))
def test_a_gpu_attacks_kernel_is_not_delegation(name):
    if str(ROOT / "worker") not in sys.path:
        sys.path.insert(0, str(ROOT / "worker"))  # the static checks, run here as the worker runs them
    from kforge_worker.checks import static_checks

    source = (FORGED_GPU / f"{name}.py").read_text()
    prob = _expectations()[f"forged_gpu/{name}.py"][0]
    checks = {c["name"]: c for c in static_checks.run(source, problem(prob).read_text(), CUDA_ALLOWED,
                                                      kernel_modules=["triton"])}
    assert checks["static.torch_delegation"]["verdict"] == "pass", checks["static.torch_delegation"]
    # What else the static checks find is what the CPU original has: its names built at run time.
    failed = {n for n, c in checks.items() if c["verdict"] == "fail"}
    assert failed <= {"static.dynamic_code"}, failed
    assert "cuda.compile(SRC)" in source and "extern \"C\" __global__" in source


def test_the_gpu_attacks_kernels_build(kforge):
    files = sorted(FORGED_GPU.glob("*.py"))
    out = kforge.tmp / "compiled.json"
    proc = kforge.run("eval", problem("relu"), *files, "--target", "cuda", "--compile-only", "--json", out,
                      timeout=300)
    text = proc.stdout + proc.stderr
    if "NVRTC (libnvrtc) not found" in text:
        pytest.skip("no NVRTC here: the cuda kernels cannot be built")
    evaluations = json.loads(out.read_text())["evaluations"]
    assert [e["status"] for e in evaluations] == ["compiled"] * len(files), text[-3000:]
