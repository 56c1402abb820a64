import pytest

from kforge_worker.common import problem
from kforge_worker.common.errors import ProblemError

SOURCE = """
import torch
import torch.nn as nn

batch_size = 64
dim = batch_size * 4
kernel_size = 3

class Model(nn.Module):
    def forward(self, x):
        return x

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
"""


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "prob.py"
    p.write_text(SOURCE)
    return str(p)


def test_overrides_apply_before_derived_globals(path):
    module = problem.load_problem(path, {"batch_size": 5})
    assert module.batch_size == 5
    assert module.dim == 20
    assert module.get_inputs()[0].shape == (5, 20)


def test_unknown_override_is_a_problem_error(path):
    with pytest.raises(ProblemError, match="nosuch"):
        problem.load_problem(path, {"nosuch": 1})


def test_an_override_of_another_kind_than_the_files_number_is_a_problem_error(path):
    for value in ("abc", "2.5", "(3, 3)"):
        with pytest.raises(ProblemError, match=r"--set batch_size=.*sets batch_size to 64, so the value must be an integer"):
            problem.load_problem(path, {"batch_size": problem.parse_value(value)})
    assert problem.load_problem(path, {"batch_size": 8}).batch_size == 8


def test_parse_value_reads_python_literals():
    assert problem.parse_value("12") == 12
    assert problem.parse_value("0.5") == 0.5
    assert problem.parse_value("(3, 3)") == (3, 3)
    assert problem.parse_value("relu") == "relu"


def test_size_globals_skip_small_integers(path):
    assert problem.size_globals(path) == {"batch_size": 64}


def test_shape_variants_change_sizes_to_non_powers_of_two(path):
    variants = problem.shape_variants(path, {}, 2)
    assert [v["batch_size"] for v in variants] == [33, 83]
    assert all("kernel_size" not in v for v in variants)


def test_aligned_variants_keep_the_power_of_two_that_divides_each_size(path):
    # KernelBench's 23_Softmax: rows of 393216 = 3 * 2**17 floats; a float4 kernel needs multiples of 4.
    assert [problem.aligned_half(n) for n in (393216, 4096, 65535, 16, 3, 1)] == [196608, 2048, 32767, 32, 1, 2]
    assert [v["batch_size"] for v in problem.shape_variants(path, {}, 3, aligned=True)] == [128]


def test_missing_model_is_reported(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text("def get_inputs():\n    return []\n\ndef get_init_inputs():\n    return []\n")
    with pytest.raises(ProblemError, match="defines no Model"):
        problem.load_problem(str(p))
