"""The helion target's bundled kernels, checked without a GPU: each runs in Helion's interpreter
(HELION_INTERPRET=1: the tile loops run as eager PyTorch on the CPU) against its problem, and each is
compiled to Triton source for its fixed configuration. Timing them needs an NVIDIA GPU."""

import importlib.util
import os

import pytest
import torch

pytest.importorskip("helion", reason="helion not installed (worker/requirements.txt)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CANDIDATES = os.path.join(ROOT, "examples", "candidates", "helion")
PROBLEMS = os.path.join(ROOT, "examples", "problems")
# The interpreter has no CPU kernel for hl.dot's fp32-accumulating matmul (aten::mm.dtype), so the
# matmul kernel is checked by its Triton code generation alone.
INTERPRETED = ["01_relu", "03_softmax", "12_swish"]


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pair(problem_path, candidate_path, name):
    problem = _load(problem_path, f"helion_problem_{name}")
    cand = _load(candidate_path, f"helion_candidate_{name}")
    torch.manual_seed(0)
    ref = problem.Model(*problem.get_init_inputs())
    new = cand.ModelNew(*problem.get_init_inputs())
    new.load_state_dict(ref.state_dict(), strict=True)
    return problem, cand, ref, new


@pytest.mark.parametrize("name", INTERPRETED + ["example"])
def test_kernel_is_correct_in_the_interpreter(monkeypatch, name):
    monkeypatch.setenv("HELION_INTERPRET", "1")  # read when the kernel is defined, at import
    if name == "example":
        paths = (os.path.join(ROOT, "targets", "helion", "example_reference.py"),
                 os.path.join(ROOT, "targets", "helion", "example_candidate.py"))
    else:
        paths = (os.path.join(PROBLEMS, f"{name}.py"), os.path.join(CANDIDATES, f"{name}.py"))
    problem, _, ref, new = _pair(*paths, name)
    torch.manual_seed(1)
    inputs = problem.get_inputs()
    with torch.no_grad():
        torch.testing.assert_close(new(*inputs), ref(*inputs), atol=1e-4, rtol=1e-4)


class _Generated(Exception):
    """Stops forward once its kernel's Triton source has been generated."""


def test_every_bundled_kernel_compiles_to_triton_with_its_fixed_config():
    import helion

    names = sorted(f[:-3] for f in os.listdir(CANDIDATES) if f.endswith(".py"))
    assert names, "no bundled helion candidates"
    for name in names:
        problem, cand, _, new = _pair(os.path.join(PROBLEMS, f"{name}.py"), os.path.join(CANDIDATES, f"{name}.py"), name)
        kernels = {k: v for k, v in vars(cand).items() if isinstance(v, helion.Kernel)}
        assert len(kernels) == 1, f"{name}: expected one @helion.kernel"
        (attr, kernel), = kernels.items()
        assert len(kernel.configs) == 1, f"{name}: the kernel must carry one fixed config (no autotuning)"

        def generate(*args):  # called by forward with the arguments it really passes
            raise _Generated(kernel.bind(args).to_triton_code(kernel.configs[0]))

        setattr(cand, attr, generate)
        with pytest.raises(_Generated) as generated, torch.no_grad():
            new(*problem.get_inputs())
        assert "@triton.jit" in str(generated.value), name
