"""nvcc's host and device passes side by side (kforge_worker/builder/nvcc_lanes.py): the same object and
dependency file as nvcc, the same errors, nvcc itself for what cannot be split, and the builder's
load_inline builds through it. Needs nvcc (no GPU): CI's machine has it."""

import os
import shlex
import shutil
import subprocess
import sys

import pytest

from kforge_worker.builder import nvcc_lanes

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
pytestmark = pytest.mark.skipif(not os.path.exists(NVCC), reason="nvcc not installed: the lanes run nvcc's own passes")
ARCH = "-gencode=arch=compute_90,code=sm_90"

# A kernel in an anonymous namespace (named through the module id on both sides), a template kernel
# instantiated by the host code, and a header of its own (in the dependency file).
SOURCE = r"""
#include "scale.h"
namespace { __global__ void scale(float* x) { x[threadIdx.x] *= SCALE; } }
template <int N> __global__ void shift(float* x) { x[threadIdx.x] += N; }
void launch(float* x) { scale<<<1, 32>>>(x); shift<3><<<1, 32>>>(x); }
"""


@pytest.fixture
def source_dir(tmp_path):
    (tmp_path / "scale.h").write_text("#pragma once\n#define SCALE 2\n")
    (tmp_path / "k.cu").write_text(SOURCE)
    return tmp_path


def nvcc(cwd, *args):
    return subprocess.run([NVCC, *args], cwd=cwd, capture_output=True, text=True)


def lanes(cwd, *args):
    return subprocess.run([sys.executable, nvcc_lanes.__file__, NVCC, *args], cwd=cwd, capture_output=True, text=True)


def test_given_nvccs_module_id_the_object_and_dependencies_are_nvccs_byte_for_byte(source_dir, monkeypatch):
    keep = source_dir / "keep"
    keep.mkdir()
    r = nvcc(source_dir, "-MD", "-MF", "a.o.d", "-c", "k.cu", "-o", "a.o", ARCH, "--keep", "--keep-dir", "keep")
    assert r.returncode == 0, r.stderr
    module = (keep / "k.module_id").read_text()
    monkeypatch.chdir(source_dir)
    args = ["-MD", "-MF", "b.o.d", "-c", "k.cu", "-o", "b.o", ARCH]
    plan = nvcc_lanes.plan(nvcc_lanes.dry_run(NVCC, args, "keep"), "b.o")  # nvcc's own folder: the same paths
    assert [nvcc_lanes._tool(shlex.split(c)) for _, c in plan.host] == ["gcc", "cudafe++"]
    assert [nvcc_lanes._tool(shlex.split(c)) for _, c in plan.device] == ["gcc", "cicc", "ptxas", "fatbinary"]
    assert nvcc_lanes.run(plan, module, "k.cu") == 0
    assert (source_dir / "b.o").read_bytes() == (source_dir / "a.o").read_bytes()
    assert (source_dir / "b.o.d").read_text() == (source_dir / "a.o.d").read_text().replace("a.o :", "b.o :", 1)
    assert "scale.h" in (source_dir / "b.o.d").read_text()


def test_a_compile_through_the_lanes_has_its_own_module_id_and_kernels(source_dir):
    assert lanes(source_dir, "-c", "k.cu", "-o", "b.o", ARCH).returncode == 0
    symbols = subprocess.run(["nm", "-C", "b.o"], cwd=source_dir, capture_output=True, text=True).stdout
    assert "launch(float*)" in symbols and "shift<3>" in symbols
    assert nvcc_lanes.module_id(str(source_dir / "k.cu")).endswith("_4_k_cu")
    (source_dir / "k2.cu").write_text(SOURCE)
    assert nvcc_lanes.module_id(str(source_dir / "k.cu")) != nvcc_lanes.module_id(str(source_dir / "k2.cu"))


def test_a_compile_error_reads_as_nvccs(tmp_path):
    (tmp_path / "bad.cu").write_text("__global__ void k(float* x) { x[0] = undeclared_name; }\n")
    plain = nvcc(tmp_path, "-c", "bad.cu", "-o", "a.o", ARCH)
    split = lanes(tmp_path, "-c", "bad.cu", "-o", "b.o", ARCH)
    assert plain.returncode != 0 and split.returncode == plain.returncode
    # Both cudafe++ and cicc meet the error; only the first pass in nvcc's order speaks, as in nvcc.
    assert split.stdout + split.stderr == plain.stdout + plain.stderr
    assert split.stderr.count("undeclared_name") == plain.stderr.count("undeclared_name") >= 1


@pytest.mark.parametrize("args", [["-E", "k.cu", "-o", "k.ii"], ["-rdc=true", "-c", "k.cu", "-o", "k.o", ARCH]])
def test_what_the_lanes_cannot_split_nvcc_compiles_itself(source_dir, monkeypatch, args):
    ran = []
    real_run = nvcc_lanes.run
    monkeypatch.setattr(nvcc_lanes, "run", lambda *a: ran.append(a) or real_run(*a))
    monkeypatch.chdir(source_dir)
    assert nvcc_lanes.compile_source(NVCC, args) == 0
    assert ran == [] and os.path.getsize(source_dir / args[args.index("-o") + 1]) > 0


def test_dry_run_lines_it_does_not_know_are_not_planned():
    cudafe = ('cudafe++ --gen_c_file_name "w/k.cudafe1.cpp" --stub_file_name "k.cudafe1.stub.c" --gen_module_id_file '
              '--module_id_file_name "w/k.module_id" "w/k.cpp4.ii"')
    usual = ['gcc -E -x c++ "k.cu" -o "w/k.cpp4.ii"', cudafe,
             'gcc -D__CUDA_ARCH__=900 -E -x c++ "k.cu" -o "w/k.cpp1.ii"',
             '"$CICC_PATH/cicc" --module_id_file_name "w/k.module_id" "w/k.cpp1.ii" -o "w/k.ptx"',
             'ptxas -arch=sm_90 "w/k.ptx" -o "w/k.cubin"', 'fatbinary --create="w/k.fatbin"',
             'gcc -c -x c++ "w/k.cudafe1.cpp" -o "k.o"']
    assert nvcc_lanes.plan(["PATH=/usr/bin", *usual], "k.o") is not None
    assert nvcc_lanes.plan(usual[:3] + ['nvlink "w/k.cubin"'] + usual[3:], "k.o") is None  # a pass it does not know
    assert nvcc_lanes.plan([c.replace("--gen_module_id_file ", "") for c in usual], "k.o") is None  # no id made
    assert nvcc_lanes.plan([c.replace('--stub_file_name "k.cudafe1.stub.c" ', "") for c in usual], "k.o") is None
    assert nvcc_lanes.plan(usual[:3] + [usual[3].replace("w/k.module_id", "w/other")] + usual[4:], "k.o") is None
    assert nvcc_lanes.plan(usual, "elsewhere.o") is None


@pytest.mark.xdist_group("build_pch")  # the worker that makes the `headers` builds (conftest.py)
def test_the_builder_runs_load_inlines_nvcc_through_the_lanes(headers):
    """A real build (no sandbox, no GPU): the library imports, and torch's verbose log shows the lanes.
    The first of the `headers` builds: its own build of a cuda source would take minutes on CI."""
    torch_ext = pytest.importorskip("torch.utils.cpp_extension")
    if not torch_ext.CUDA_HOME:
        pytest.skip("torch finds no CUDA toolkit")
    _, _, reply, _, _ = headers
    assert reply["cuda_headers"] == "torch/types.h"
    assert "nvcc_lanes.py" in reply["log"]
    module = torch_ext._import_module_from_library(reply["name"], reply["path"], True)
    assert callable(module.run)
