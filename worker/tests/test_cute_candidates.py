"""The cute target's bundled kernels, built without a GPU: cute.compile lowers each candidate's
@cute.jit function to a GPU module for sm_90a (CUTE_DSL_ARCH) on the CPU. Running them needs an
NVIDIA GPU, so here the compiled function is kept and never called: this checks that the kernels
build for the shapes of their problems, not what they compute."""

import importlib.util
import os
import re

import pytest
import torch

# Read once, when the DSL is imported: Hopper, the GPU kforge's cuda targets default to (sm_90a).
os.environ["CUTE_DSL_ARCH"] = "sm_90a"
cute = pytest.importorskip("cutlass.cute", reason="nvidia-cutlass-dsl not installed (worker/requirements-cute.txt)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAIRS = {
    "example": (os.path.join(ROOT, "targets", "cute", "example_reference.py"),
                os.path.join(ROOT, "targets", "cute", "example_candidate.py")),
    **{name: (os.path.join(ROOT, "examples", "problems", f"{name}.py"),
              os.path.join(ROOT, "examples", "candidates", "cute", f"{name}.py"))
       for name in sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "examples", "candidates", "cute"))
                          if f.endswith(".py"))},
}


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_kernel_builds_for_hopper_without_a_gpu(monkeypatch, name):
    built = []
    compile_for_real = cute.compile

    def compile_and_keep(fn, *args, **kwargs):
        built.append(compile_for_real(fn, *args, **kwargs))
        return lambda *call_args: None  # launching needs the GPU: the compiled function is not called

    monkeypatch.setattr(cute, "compile", compile_and_keep)
    problem_path, candidate_path = PAIRS[name]
    problem = _load(problem_path, f"cute_problem_{name}")
    cand = _load(candidate_path, f"cute_candidate_{name}")
    torch.manual_seed(0)
    model = cand.ModelNew(*problem.get_init_inputs())
    with torch.no_grad():
        model(*problem.get_inputs())
    assert built, f"{name}: forward compiled nothing"
    for compiled in built:
        assert compiled.has_gpu_module and compiled.kernel_info, name
        assert set(re.findall(r"sm_\d+a?", str(compiled.ir_module))) == {"sm_90a"}, name
