"""The trusted builder's side of a load_inline request (sandboxed_build.build_load_inline): what it
accepts from the candidate, what it writes itself and what it leaves to the sandbox. The sandboxed
compiler is a stand-in here: nothing in these tests needs a real one."""

import json
import os
import subprocess
import sys

import pytest

from kforge_worker.builder import sandboxed_build

SOURCE = "int twice(int x) { return 2 * x; }\n"


def params(**extra):
    return {"name": "twice", "cpp_sources": SOURCE, "functions": ["twice"], **extra}


@pytest.fixture
def extensions(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "extensions"))
    (tmp_path / "extensions").mkdir()
    (tmp_path / "build").mkdir()
    return tmp_path


def build_leaving_a_library(argv, cwd, timeout, stdin=None, env=None):
    """The sandboxed build's stand-in: leaves NAME.so for every library build.ninja names."""
    for line in open(os.path.join(cwd, "build.ninja")):
        if line.startswith("build ") and ".so:" in line:
            with open(os.path.join(cwd, line.split()[1].rstrip(":")), "wb") as f:
                f.write(b"\x7fELF library")
    return subprocess.CompletedProcess(argv, 0, "built\n", "")


@pytest.mark.parametrize("name", ["../../escaped", "a/b", "/tmp/abs", "twice; rm", ""])
def test_a_name_that_is_not_an_identifier_is_refused_before_anything_is_written(extensions, monkeypatch, name):
    """The name becomes a folder of the shared cache (TORCH_EXTENSIONS_DIR/NAME_KEY): a name with
    a path in it would have the trusted builder publish the library outside the cache."""
    monkeypatch.setattr(sandboxed_build, "_run", build_leaving_a_library)
    with pytest.raises(sandboxed_build.BuildFailed, match="identifier"):
        sandboxed_build.build_load_inline({"params": params(name=name)}, [], str(extensions / "build"), 60)
    assert sorted(os.listdir(extensions)) == ["build", "extensions"]
    assert os.listdir(extensions / "extensions") == [] and os.listdir(extensions / "build") == []


KERNEL = r"""
#include <torch/extension.h>
__global__ void twice(float* x, long n) { long i = blockIdx.x * 256 + threadIdx.x; if (i < n) x[i] *= 2; }
torch::Tensor twice_(torch::Tensor x) { twice<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), x.numel()); return x; }
"""


def test_the_folder_kforge_writes_is_the_one_load_inline_writes(tmp_path):
    """inline_plan runs torch's load_inline up to its build: the sources and build.ninja are those
    of load_inline itself (here stopped by a ninja that fails), byte for byte."""
    from kforge_worker.builder import inline_plan

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ninja").write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 1.11.1 && exit 0\nexit 1\n")
    (bin_dir / "ninja").chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "MAX_JOBS": "3", "TORCH_CUDA_ARCH_LIST": "9.0"}
    args = {"name": "twice", "cpp_sources": "torch::Tensor twice_(torch::Tensor x);", "cuda_sources": KERNEL,
            "functions": ["twice_"], "extra_cuda_cflags": ["-O3"], "verbose": True}
    folders = {}
    for how in ("torch", "kforge"):
        folder = tmp_path / how
        folder.mkdir()
        folders[how] = folder
        if how == "torch":
            script = ("import json, sys\nfrom torch.utils import cpp_extension\n"
                      "try:\n    cpp_extension.load_inline(**json.loads(sys.argv[1]))\nexcept RuntimeError:\n    pass\n")
            subprocess.run([sys.executable, "-c", script, json.dumps(dict(args, build_directory=str(folder)))],
                           env=dict(os.environ, **env), check=True, capture_output=True)
        else:
            plan = inline_plan.write(dict(args, build_directory=str(folder)), env)
            assert plan == inline_plan.Plan(["ninja", "-v", "-j", "3"], "twice", True)
    names = sorted(os.listdir(folders["torch"]))
    assert names == ["build.ninja", "cuda.cu", "main.cpp"] and sorted(os.listdir(folders["kforge"])) == names
    for name in names:  # each names its own folder
        theirs, ours = ((folders[how] / name).read_text().replace(str(folders[how]), "FOLDER") for how in folders)
        assert ours == theirs, name
    assert "PATH" not in os.environ or os.environ["PATH"] != env["PATH"]  # the variables were this call's only


def test_load_inlines_own_precompiled_header_is_never_made_outside_the_sandbox(extensions, monkeypatch):
    """load_inline(use_pch=True) compiles torch/extension.h with the candidate's flags before its
    build: in kforge's trusted process that would run what the flags name (here gcc's -wrapper)."""
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    monkeypatch.setattr(sandboxed_build, "_run", build_leaving_a_library)
    mark = extensions / "pwned-by-use-pch"
    # torch splits its header command at spaces: the shell's own ${IFS} stands for one.
    attack = params(use_pch=True, extra_cflags=["-wrapper", f"/bin/sh,-c,touch${{IFS}}{mark}"])
    reply = sandboxed_build.build_load_inline({"params": attack}, [], str(extensions / "build"), 60)
    assert not mark.exists()
    with open(os.path.join(extensions / "build", "build.ninja")) as f:
        assert "-wrapper" in f.read()  # the flags reach the build, which runs in the sandbox
    assert os.path.exists(os.path.join(reply["path"], reply["name"] + ".so"))


def test_sycl_builds_are_refused_before_anything_runs(extensions, monkeypatch):
    monkeypatch.setattr(sandboxed_build, "_run", build_leaving_a_library)
    for sycl in ({"sycl_sources": "int x;"}, {"with_sycl": True}):
        with pytest.raises(sandboxed_build.BuildFailed, match="SYCL"):
            sandboxed_build.build_load_inline({"params": params(**sycl)}, [], str(extensions / "build"), 60)


def test_a_builder_started_ahead_serves_its_request_and_one_no_request_came_to_exits_quietly(tmp_path):
    """kforge starts a builder with ``--warm`` beside a load_inline candidate (src/eval/build_broker.cc):
    torch is imported before the request (its reply's ``warm_builder``: tests/e2e/test_gpu_compile_only.py);
    the request is checked as any; stopped without a request, it just ends."""
    worker = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(sandboxed_build.__file__))))
    env = dict(os.environ, PYTHONPATH=worker, KFORGE_RESPONSE_FD="1")
    command = [sys.executable, "-m", "kforge_worker.builder.sandboxed_build", "--warm"]
    quiet = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=300)
    assert quiet.returncode == 0 and quiet.stdout == "" and "Traceback" not in quiet.stderr, quiet.stderr
    request = {"request": {"kind": "load_inline", "params": {"name": "../escaped"}}, "sandbox": [],
               "build_dir": str(tmp_path)}
    r = subprocess.run(command, input=json.dumps(request) + "\n", capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=300)
    reply = json.loads(r.stdout)
    assert not reply["ok"] and "must be an identifier" in reply["error"]  # refused as by a cold builder
