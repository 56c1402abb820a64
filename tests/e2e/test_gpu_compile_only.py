"""`kforge eval --compile-only` for the GPU targets, on a machine without a GPU (CI): every bundled
cuda candidate builds (NVRTC, sm_90a), build failures come back as compile_error with the compiler's
lines, and Triton candidates are checked for correctness in Triton's interpreter on the CPU."""

import os
import re

import pytest

from e2e_support import ROOT, candidate

PROBLEMS = ROOT / "examples" / "problems"
CUDA = sorted((ROOT / "examples" / "candidates" / "cuda").glob("*.py"))
# The interpreter runs kernels in NumPy: the quicker candidates, each a different kind of kernel.
TRITON = ["01_relu", "05_matmul", "07_layernorm", "14_mean_std_tuple"]


@pytest.mark.parametrize("cand", CUDA, ids=[c.stem for c in CUDA])
def test_cuda_candidate_compiles(kforge, cand):
    proc, result = kforge.eval(PROBLEMS / cand.name, cand, "--target", "cuda", "--compile-only")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "compiled" and result["compile_only"] == "build"
    events = result["build"]["events"]
    assert events and all(e["path"] == "cuda-nvrtc" and e["arch"] == "sm_90a" for e in events)


def test_cuda_example_compiles_in_a_private_cache(kforge):
    folder = ROOT / "targets" / "cuda"
    for hit in (False, True):  # a candidate's cubins live in its private cache: the second process builds again
        proc, result = kforge.eval(folder / "example_reference.py", folder / "example_candidate.py", "--target",
                                   "cuda", "--compile-only")
        assert result["status"] == "compiled", proc.stdout + proc.stderr
        if hit:
            assert [e["cache_hit"] for e in result["build"]["events"]] == [False]


def test_cuda_compile_error_is_reported_with_the_nvrtc_line(kforge):
    proc, result = kforge.eval(PROBLEMS / "01_relu.py", candidate("cuda_compile_error"), "--target", "cuda",
                               "--compile-only")
    assert proc.returncode == 1
    assert result["status"] == "compile_error"
    assert 'kernel.cu(4): error: identifier "undeclared_zero" is undefined' in result["error"]["log"]


def test_arch_is_configurable(kforge):
    kforge.env["KFORGE_CUDA_ARCH"] = "sm_80"
    proc, result = kforge.eval(PROBLEMS / "01_relu.py", ROOT / "examples" / "candidates" / "cuda" / "01_relu.py",
                               "--target", "cuda", "--compile-only")
    assert result["status"] == "compiled", proc.stdout + proc.stderr
    assert result["build"]["events"][0]["arch"] == "sm_80"


@pytest.mark.parametrize("name", TRITON)
def test_triton_candidate_is_correct_in_the_interpreter(kforge, name):
    cand = ROOT / "examples" / "candidates" / "triton" / f"{name}.py"
    proc, result = kforge.eval(PROBLEMS / f"{name}.py", cand, "--target", "triton", "--compile-only", "--trials", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "correct" and result["compile_only"] == "interpreter"
    assert result["device"] == "cpu" and "timing" not in result


def test_wrong_triton_candidate_is_caught_in_the_interpreter(kforge):
    proc, result = kforge.eval(PROBLEMS / "01_relu.py", candidate("triton_wrong"), "--target", "triton",
                               "--compile-only", "--trials", "1")
    assert proc.returncode == 1
    assert result["status"] == "incorrect"


def pch_cache(headers):
    """The kforge cache whose precompiled headers the worker tests' real builds made (the `headers`
    fixture, conftest.py): a build of the same flags through `kforge eval` finds them instead of
    making them again (minutes on two cores)."""
    store = headers[0]
    return store.parent


@pytest.mark.xdist_group("build_pch")  # the worker that holds the `headers` builds
def test_a_load_inline_cuda_candidate_builds_in_the_sandboxed_builder_through_the_lanes(kforge, tmp_path, headers):
    """KernelBench's usual candidate: kforge's sandboxed builder compiles its cuda.cu against
    torch/types.h (ATen declaring the operators named), with nvcc's passes in two lanes, whose module
    id names the anonymous namespace. Its builds find the precompiled headers of their flags, which
    the builder made after an earlier build (test_build_pch proves the making)."""
    cache = pch_cache(headers)
    env = {**kforge.env, "KFORGE_CACHE_DIR": str(cache)}
    proc, result = kforge.eval(PROBLEMS / "01_relu.py", candidate("load_inline_cuda"), "--target", "cuda",
                               "--compile-only", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] == "compiled", result
    [event] = result["build"]["events"]
    assert event["path"] == "load_inline" and event["cuda_headers"] == "torch/types.h" and not event["cache_hit"]
    assert event["aten_operators"] == "named"  # lean_aten's folder, seen read-only in the compiler's sandbox
    assert event["warm_builder"] is True  # started beside the worker, torch imported before the request
    assert event["precompiled_headers"] == {"torch_extension": "used", "cuda_prefix": "used"}
    [library] = (cache / "torch_extensions").glob(f"{event['name']}/{event['name']}.so")
    # nvcc_lanes.module_id's shape (_HASH_LENGTH_NAME, the kernel's name right after it); nvcc's own
    # id goes on with more of its own.
    assert re.search(rb"_GLOBAL__N__[0-9a-f]{8}_7_cuda_cu\d+relu_kernel", library.read_bytes())

    other = tmp_path / "other.py"
    other.write_text(candidate("load_inline_cuda").read_text().replace("x[i] : 0.f", "x[i] : 0.0f"))
    proc, result = kforge.eval(PROBLEMS / "01_relu.py", other, "--target", "cuda", "--compile-only", env=env)
    assert result["status"] == "compiled", proc.stdout + proc.stderr
    [event] = result["build"]["events"]
    assert event["precompiled_headers"] == {"torch_extension": "used", "cuda_prefix": "used"}
    # The header's module id (build_pch): the same for every build of these flags.
    [library] = (cache / "torch_extensions").glob(f"{event['name']}/{event['name']}.so")
    [header] = (cache / "pch").glob("*/module_id")
    module = re.escape(header.read_text().strip().encode())
    assert re.search(rb"_GLOBAL__N_" + module + rb"\d+relu_kernel", library.read_bytes())

    # A cache hit: the builder started beside the worker gets no request, and goes with the worker.
    proc, result = kforge.eval(PROBLEMS / "01_relu.py", other, "--target", "cuda", "--compile-only", env=env)
    assert result["status"] == "compiled", proc.stdout + proc.stderr
    [event] = result["build"]["events"]
    assert event["cache_hit"] and "warm_builder" not in event
    assert _processes_with(f"KFORGE_PCH_DIR={cache / 'pch'}") == []


def _processes_with(variable: str) -> list:
    """The processes whose environment holds ``variable`` (NAME=VALUE)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if variable.encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.mark.xdist_group("build_pch")  # the worker that holds the `headers` builds
def test_a_load_inline_compile_error_comes_back_with_nvccs_line(kforge, tmp_path, headers):
    """The builder's sandbox runs ninja on the folder the builder wrote: a source that compiles in
    neither attempt is a compile_error with the line of the build as written."""
    broken = tmp_path / "broken.py"
    broken.write_text(candidate("load_inline_cuda").read_text().replace("x[i] : 0.f", "x[i] : undeclared_zero"))
    env = {**kforge.env, "KFORGE_CACHE_DIR": str(pch_cache(headers))}
    proc, result = kforge.eval(PROBLEMS / "01_relu.py", broken, "--target", "cuda", "--compile-only", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert result["status"] == "compile_error", result
    assert re.search(r'cuda\.cu\(\d+\): error: identifier "undeclared_zero" is undefined', result["error"]["log"])
    assert "cuda_headers" not in result["error"]["log"]  # the lighter attempt's commands (-I .../cuda_headers) are not shown
