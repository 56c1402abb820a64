"""The builder compiles a load_inline CUDA source against torch/types.h first, and as written where
that does not build (cuda_header_choice, sandboxed_build.build_load_inline)."""

import os
import subprocess

import pytest

from kforge_worker.builder import cuda_header_choice, sandboxed_build

KERNEL = r"""
#include <torch/extension.h>
__global__ void twice(float* x, long n) { long i = blockIdx.x * 256 + threadIdx.x; if (i < n) x[i] *= 2; }
torch::Tensor twice_(torch::Tensor x) { twice<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), x.numel()); return x; }
"""


def params(**extra):
    return {"name": "twice", "cpp_sources": "torch::Tensor twice_(torch::Tensor x);", "cuda_sources": KERNEL,
            "functions": ["twice_"], "extra_cuda_cflags": ["-O3"], "no_implicit_headers": False, **extra}


def test_a_plain_kernel_gets_the_lighter_header_first_and_keeps_its_flags():
    light = cuda_header_choice.light_params(params())
    assert light["extra_cuda_cflags"] == [f"-I{cuda_header_choice.HEADERS}", "-O3"]
    assert {k: v for k, v in light.items() if k != "extra_cuda_cflags"} == {
        k: v for k, v in params().items() if k != "extra_cuda_cflags"}
    header = os.path.join(cuda_header_choice.HEADERS, "torch", "extension.h")
    assert "#include <torch/types.h>" in open(header).read().splitlines()


@pytest.mark.parametrize("why", ["no CUDA source", "no implicit headers", "pybind11", "torch::nn", "torch::linalg"])
def test_sources_that_need_the_full_header_are_built_as_written(why):
    p = {"no CUDA source": params(cuda_sources=None),
         "no implicit headers": params(no_implicit_headers=True),
         "pybind11": params(cuda_sources=KERNEL + "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"t\", &twice_); }"),
         "torch::nn": params(cuda_sources=KERNEL + "auto f = torch::nn::functional::relu;"),
         "torch::linalg": params(cuda_sources=[KERNEL, "auto g(torch::Tensor a) { return torch::linalg::norm(a); }"]),
         }[why]
    assert cuda_header_choice.light_params(p) is None


class FakeCompiler:
    """sandboxed_build._run's stand-in: the lighter attempt fails or succeeds as told; a success leaves
    the library where load_inline would."""

    def __init__(self, light_builds: bool):
        self.light_builds = light_builds
        self.attempts = []
        self.found_planted = []

    def __call__(self, argv, cwd, timeout, stdin=None, env=None):
        import json

        plan = json.loads(stdin)
        with open(os.path.join(cwd, "build.ninja")) as f:  # load_inline's, as kforge's builder wrote it
            light = cuda_header_choice.HEADERS in f.read()
        self.attempts.append("light" if light else "as written")
        self.found_planted.append(os.path.exists(os.path.join(cwd, "json.py")))
        ok = self.light_builds or not light
        if not ok:  # what a hostile first attempt's compiler could leave for the next interpreter
            with open(os.path.join(cwd, "json.py"), "w") as f:
                f.write("raise SystemExit('planted')\n")
        if ok:
            with open(os.path.join(cwd, plan["name"] + ".so"), "wb") as f:
                f.write(b"\x7fELF library")
        out = "built" if ok else "cuda.cu(3): error: namespace \"torch\" has no member \"manual_seed\""
        return subprocess.CompletedProcess(argv, 0 if ok else 1, out + f" ({self.attempts[-1]})\n", "")


@pytest.mark.parametrize("light_builds", [True, False])
def test_the_builder_falls_back_to_the_source_as_written(light_builds, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    (tmp_path / "extensions").mkdir()
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    compiler = FakeCompiler(light_builds)
    monkeypatch.setattr(sandboxed_build, "_run", compiler)
    reply = sandboxed_build.build_load_inline({"kind": "load_inline", "params": params()}, [], str(build_dir), 60)
    assert compiler.attempts == (["light"] if light_builds else ["light", "as written"])
    assert not any(compiler.found_planted)  # the second attempt starts in an emptied folder
    assert reply["cuda_headers"] == ("torch/types.h" if light_builds else "torch/extension.h")
    assert os.path.exists(os.path.join(reply["path"], reply["name"] + ".so"))
    # The candidate reads the log of the build as written only: the lighter attempt's errors are kforge's.
    assert "error" not in reply["log"] and reply["log"].endswith(f"({compiler.attempts[-1]})\n")


def test_a_source_that_builds_in_neither_way_reports_the_build_as_written(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    (tmp_path / "extensions").mkdir()
    (tmp_path / "build").mkdir()
    attempts = []

    def broken(argv, cwd, timeout, stdin=None, env=None):
        attempts.append(stdin)
        return subprocess.CompletedProcess(argv, 1, f"cuda.cu(2): error: attempt {len(attempts)}\n", "")

    monkeypatch.setattr(sandboxed_build, "_run", broken)
    with pytest.raises(sandboxed_build.BuildFailed) as failed:
        sandboxed_build.build_load_inline({"kind": "load_inline", "params": params()}, [], str(tmp_path / "build"), 60)
    assert len(attempts) == 2 and "attempt 2" in str(failed.value) and "attempt 1" not in failed.value.log
