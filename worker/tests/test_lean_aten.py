"""lean_aten: ATen's Functions.h cut to the operators torch's headers and the candidate's source name,
and with real nvcc (no GPU) that a source compiled against it is the object compiled against torch's."""

import os
import shutil
import stat

import pytest

from kforge_worker.builder import build_pch, cuda_header_choice, lean_aten, nvcc_lanes

FUNCTIONS = """#pragma once
#include <ATen/Context.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/zeros.h>

namespace at {
inline Tensor var(const Tensor& self, int dim) { return at::var(self, IntArrayRef{dim}); }
}
"""


def test_only_the_kept_operators_includes_stay_and_nothing_else_changes():
    cut = lean_aten.cut(FUNCTIONS, {"matmul"})
    assert cut == FUNCTIONS.replace("#include <ATen/ops/abs.h>\n", "").replace("#include <ATen/ops/zeros.h>\n", "")
    native = FUNCTIONS.replace(".h>", "_native.h>").replace("Context_native.h", "Context.h")
    assert lean_aten.cut(native, {"abs"}, "_native") == native.replace("#include <ATen/ops/matmul_native.h>\n", "") \
        .replace("#include <ATen/ops/zeros_native.h>\n", "")


def test_torchs_own_names_are_what_headers_call_at_or_native(tmp_path):
    (tmp_path / "ATen" / "ops").mkdir(parents=True)
    (tmp_path / "ATen" / "Functions.h").write_text(FUNCTIONS)
    (tmp_path / "ATen" / "ops" / "abs.h").write_text("at::zeros(x);")  # an operator's own header: not read
    (tmp_path / "c10").mkdir()
    (tmp_path / "c10" / "x.h").write_text("at::symint::empty(s) + native::mul(a) + at::native::div(a) + at::_ops::add::call(a);")
    assert lean_aten.named_by_torch(str(tmp_path)) == {"var", "empty", "mul", "div", "_ops"}
    assert lean_aten.operators(str(tmp_path)) == ["abs", "matmul", "zeros"]


def test_the_operators_a_source_names_are_included_before_its_first_line_which_keeps_its_number(tmp_path):
    (tmp_path / "ATen").mkdir()
    (tmp_path / "ATen" / "Functions.h").write_text(FUNCTIONS)
    sources = ["#include <torch/extension.h>\nauto f(at::Tensor a) { return matmul(a, a).abs(); }", "// zeros"]
    first, second = lean_aten.with_operator_includes(sources, str(tmp_path))
    # A name in a comment is included too: one declaration too many, never one too few.
    assert first == ("#include <ATen/ops/abs.h>\n#include <ATen/ops/matmul.h>\n#include <ATen/ops/zeros.h>\n"
                     "#line 4\n" + sources[0])
    assert second == sources[1]
    assert lean_aten.with_operator_includes(["__global__ void k() {}"], str(tmp_path)) == ["__global__ void k() {}"]
    native = lean_aten.with_operator_includes(["at::native::abs(a);"], str(tmp_path))[0]
    assert native.startswith("#include <ATen/ops/abs.h>\n#include <ATen/ops/abs_native.h>\n#line 4\n")


def test_the_lighter_attempt_gets_the_folder_first_and_the_includes():
    plain = {"name": "k", "cuda_sources": "auto f(at::Tensor a) { return at::matmul(a, a); }",
             "extra_cuda_cflags": ["-O3"]}
    light = cuda_header_choice.light_params(plain, "/lean")
    assert light["extra_cuda_cflags"] == [f"-I{cuda_header_choice.HEADERS}", "-I/lean", "-O3"]
    assert light["cuda_sources"] == ["#include <ATen/ops/matmul.h>\n#line 4\n" + plain["cuda_sources"]]
    assert cuda_header_choice.light_params(plain)["cuda_sources"] == plain["cuda_sources"]


torch = pytest.importorskip("torch")


def test_the_folder_is_made_once_read_only_with_a_fraction_of_the_operators(tmp_path):
    assert lean_aten.folder(str(tmp_path), create=False) is None
    folder = lean_aten.folder(str(tmp_path))
    assert lean_aten.folder(str(tmp_path)) == folder and os.path.dirname(folder) == str(tmp_path)
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(folder)]  # no staging left
    include = lean_aten.torch_include()
    ops = lean_aten.operators(include)
    kept = lean_aten.operators(folder)
    assert len(ops) > 1000 and 20 < len(kept) < len(ops) / 4
    assert {"empty_like", "var", "std"} <= set(kept)  # torch::empty_like's; Functions.h's own var(self, int)
    for path in (folder, os.path.join(folder, "ATen"), *(os.path.join(folder, "ATen", name)
                                                         for name in ("Functions.h", "NativeFunctions.h"))):
        assert not os.stat(path).st_mode & (stat.S_IWGRP | stat.S_IWOTH)  # kforge's alone to change


NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
SOURCE = r"""#include <torch/extension.h>
__global__ void relu(const float* x, float* y, long n) { long i = blockIdx.x * 256L + threadIdx.x; if (i < n) y[i] = x[i] > 0 ? x[i] : 0; }
torch::Tensor run(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be on the GPU");
    auto y = torch::empty_like(x);
    relu<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return torch::clamp_min(y, 0) + at::matmul(y, y.t()).sum(0).mean();
}
"""


@pytest.mark.skipif(not os.path.exists(NVCC), reason="nvcc not installed: the sources are compiled for real")
def test_a_source_compiled_against_the_lean_headers_is_the_object_compiled_against_torchs(tmp_path):
    from torch.utils import cpp_extension

    folder = lean_aten.folder(str(tmp_path))
    include = lean_aten.torch_include()
    flags = ["-isystem", include, "-isystem", os.path.join(include, "torch", "csrc", "api", "include"),
             "-isystem", os.path.join(cpp_extension.CUDA_HOME, "include"), "-DTORCH_API_INCLUDE_EXTENSION_H",
             "-D__CUDA_NO_HALF_OPERATORS__", "--expt-relaxed-constexpr", "-gencode=arch=compute_90,code=sm_90",
             "--compiler-options", "-fPIC", f"-I{cuda_header_choice.HEADERS}", "-O3", "-std=c++17"]
    work, source, made = tmp_path / "w", str(tmp_path / "cuda.cu"), {}
    for label, extra, body in (("torch's", [], SOURCE),
                               ("lean", [f"-I{folder}"], lean_aten.with_operator_includes([SOURCE], include)[0])):
        with open(source, "w") as f:  # one path: the object names its source (TORCH_CHECK's __FILE__)
            f.write(build_pch.CUDA_SOURCE_START + body)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work / "keep")
        out = str(work / "k.o")
        p = nvcc_lanes.plan(nvcc_lanes.dry_run(NVCC, [*flags, *extra, "-c", source, "-o", out], str(work / "keep")), out)
        assert nvcc_lanes.run(p, "_0123abcd_7_cuda_cu", source) == 0, label
        made[label] = (open(out, "rb").read(), os.path.getsize(p.host_source))
    assert made["lean"][0] == made["torch's"][0]
    assert made["lean"][1] < made["torch's"][1] * 0.8  # what the host compiler parses, after cudafe++
