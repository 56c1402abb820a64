"""Quick in-process self-check of every bundled candidate against its problem (the real harness
evaluates them out of process): same seeded weights, two seeded input draws, fp32 tolerance."""

import importlib.util
import os

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBLEMS = os.path.join(ROOT, "examples", "problems")
ATOL = RTOL = 1e-4


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pairs():
    pairs = []
    for target in ("cpu", "opencl"):
        cdir = os.path.join(ROOT, "examples", "candidates", target)
        for f in sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []:
            if f.endswith(".py"):
                pairs.append(pytest.param(os.path.join(PROBLEMS, f), os.path.join(cdir, f), id=f"{target}/{f}"))
    for target in ("cpu", "opencl"):
        tdir = os.path.join(ROOT, "targets", target)
        ref = os.path.join(tdir, "example_reference.py")
        for cand in ("example_candidate.py", "example_candidate_load_inline.py"):
            path = os.path.join(tdir, cand)
            if os.path.exists(path):
                marks = [pytest.mark.slow] if "load_inline" in cand else []
                pairs.append(pytest.param(ref, path, id=f"targets/{target}/{cand}", marks=marks))
    return pairs


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("problem_path,candidate_path", _pairs())
def test_candidate_matches_reference(problem_path, candidate_path):
    assert os.path.exists(problem_path), f"no problem file for {candidate_path}"
    problem = _load(problem_path, "problem_" + os.path.basename(problem_path)[:-3])
    candidate = _load(candidate_path, "candidate_" + os.path.basename(candidate_path)[:-3])
    torch.manual_seed(42)
    ref = problem.Model(*problem.get_init_inputs())
    torch.manual_seed(42)
    new = candidate.ModelNew(*problem.get_init_inputs())
    new.load_state_dict(ref.state_dict(), strict=True)
    for seed in (1, 2):
        torch.manual_seed(seed)
        inputs = problem.get_inputs()
        with torch.no_grad():
            want = _flat(ref(*inputs))
            got = _flat(new(*inputs))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            torch.testing.assert_close(g, w, atol=ATOL, rtol=RTOL)
