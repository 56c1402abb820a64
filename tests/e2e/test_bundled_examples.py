"""Every bundled candidate evaluates correct against its problem, through the real CLI."""

from pathlib import Path

import pytest

from e2e_support import ROOT

PAIRS = sorted(
    (target.name, cand)
    for target in (ROOT / "examples" / "candidates").iterdir()
    if target.is_dir() and target.name in ("cpu", "opencl")
    for cand in target.glob("*.py")
)


@pytest.mark.parametrize("target, cand", PAIRS, ids=[f"{t}-{c.stem}" for t, c in PAIRS])
def test_bundled_candidate_is_correct(kforge, target, cand):
    problem = ROOT / "examples" / "problems" / cand.name
    proc, result = kforge.eval(problem, cand, "--target", target, "--shapes", "1", "--reps", "10")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "correct"
    # 5 main trials (more when calibration tightened the check) and 2 for the one size variant.
    calibration = result["calibration"]
    main_trials = calibration["trials"] if calibration["tightened"] else 5
    assert result["correctness"]["trials_passed"] == result["correctness"]["trials"] == main_trials + 2, calibration
    assert len(result["correctness"]["shapes_checked"]) == 2  # the main shape and one variant
    assert result["timing"]["eager"]["median_ms"] > 0
    if result["timing"].get("compile_error") is None:
        assert result["speedup_vs_compile"] > 0


@pytest.mark.parametrize("target", ["cpu", "opencl"])
def test_single_shot_example_is_correct(kforge, target):
    folder = ROOT / "targets" / target
    proc, result = kforge.eval(folder / "example_reference.py", folder / "example_candidate.py", "--target", target,
                               "--no-compile-baseline", "--reps", "5")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "correct"


def test_set_overrides_apply_before_derived_globals(kforge, tmp_path):
    problem = tmp_path / "derived.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n\nbatch = 64\nwidth = batch * 2\n\n"
        "class Model(nn.Module):\n    def forward(self, x):\n        return x * 2\n\n"
        "def get_inputs():\n    return [torch.randn(batch, width)]\n\ndef get_init_inputs():\n    return []\n")
    cand = tmp_path / "cand.py"
    cand.write_text("import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x + x\n")
    proc, result = kforge.eval(problem, cand, "--set", "batch=3", "--shapes", "2", "--no-compile-baseline", "--reps", "3")
    assert result["status"] == "correct", proc.stdout + proc.stderr
    assert result["globals"]["batch"] == 3 and result["globals"]["width"] == 6
    assert result["correctness"]["output"] == {"shape": [3, 6], "dtype": "float32"}
    # batch is a size global (64 in the file), so variants start from the overridden 3: 3//2+1 and 3+3.
    variants = [s["globals"]["batch"] for s in result["correctness"]["shapes_checked"]]
    assert variants == [3, 2, 6]


def test_every_bundled_problem_has_a_cpu_candidate():
    """The README's bench example runs the bundled cpu candidates over every bundled problem."""
    problems = {p.name for p in (ROOT / "examples" / "problems").glob("*.py")}
    candidates = {p.name for p in (ROOT / "examples" / "candidates" / "cpu").glob("*.py")}
    assert "--candidates examples/candidates/cpu" in (ROOT / "README.md").read_text()
    assert sorted(problems - candidates) == []
