"""`kforge model`'s Python side: a model cut into regions written as problems, the shares of its
time, and the kernels installed back, verified against the original and measured."""

import importlib.util
import json
import re
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest
import torch

from kforge_worker.common import problem
from kforge_worker.model import analysis, finish, loading, patch_writer, report as report_mod

REPO = Path(__file__).resolve().parents[2]
MINI_GPT = REPO / "tests" / "e2e" / "problems" / "mini_gpt_block.py"
KERNELS = REPO / "tests" / "e2e" / "scripted" / "model_cmd"
KERNELBENCH_GIT = Path("/work/.mirror/ScalingIntelligence+KernelBench/repo")
SMALL = {"batch_size": 2, "seq_len": 16, "n_embd": 32, "n_head": 4, "max_seqlen": 16}


def kernel_source(reply: str) -> str:
    return re.search(r"```python\n(.*?)```", (KERNELS / reply).read_text(), re.S).group(1)


def by_kind(result: dict) -> dict:
    return {r["kind"]: r for r in result["regions"]}


@pytest.fixture(scope="module")
def mini_gpt(tmp_path_factory):
    out = tmp_path_factory.mktemp("mini_gpt")
    torch.set_num_threads(1)
    return out, analysis.analyze(str(MINI_GPT), {}, out, reps=5, warmup=1)


def test_regions_of_a_transformer_block(mini_gpt):
    _, result = mini_gpt
    assert result["capture"] == {"method": "torch.export", "fallback_reason": ""}
    kinds = by_kind(result)
    assert set(kinds) == {"attention", "gemm+epilogue", "gemm", "norm"}
    assert kinds["attention"]["instances"] == [["attn"]]
    assert kinds["gemm+epilogue"]["instances"] == [["mlp.c_fc", "mlp.act"]]
    # The two LayerNorms are one problem called twice.
    assert kinds["norm"]["instances"] == [["ln_1"], ["ln_2"]] and kinds["norm"]["calls"] == 2
    assert "2 call(s) per forward" in Path(kinds["norm"]["problem"]).read_text()  # the prompt shows this header
    assert kinds["norm"]["inputs"] == [{"tensor": True, "shape": [4, 128, 64], "dtype": "float32"}]
    shares = [r["share"] for r in result["regions"]]
    assert shares == sorted(shares, reverse=True)
    assert sum(shares) + result["remainder_share"] == pytest.approx(1.0, abs=1e-9)


def test_each_region_problem_reproduces_its_modules(mini_gpt):
    """The problem file's Model is the model's own modules, weights included, at the real shapes."""
    _, result = mini_gpt
    torch.manual_seed(0)
    _, model, _, _ = loading.load(str(MINI_GPT), {}, "cpu", result["seed"])
    modules = dict(model.named_modules())
    for region in result["regions"]:
        mod = problem.load_problem(region["problem"], module_name=f"region_{region['index']}")
        assert mod.get_init_inputs() == []
        inputs = mod.get_inputs()
        assert [list(t.shape) for t in inputs] == [s["shape"] for s in region["inputs"]]
        for paths in region["instances"][:1]:
            expected = inputs[0]
            with torch.no_grad():
                for p in paths:
                    expected = modules[p](expected)
                got = mod.Model()(*inputs)
            torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_a_region_problem_evaluates_as_a_problem(mini_gpt):
    """The describe command kforge run's prompts come from takes the file unchanged."""
    out, result = mini_gpt
    path = by_kind(result)["norm"]["problem"]
    proc = subprocess.run([sys.executable, "-m", "kforge_worker", "describe", path, "--json", str(out / "d.json")],
                          capture_output=True, text=True, cwd=REPO / "worker")
    assert proc.returncode == 0, proc.stderr
    described = json.loads((out / "d.json").read_text())
    assert described["inputs"][0]["shape"] == [4, 128, 64]


def test_attention_is_a_softmax_or_a_mask_between_gemms():
    from kforge_worker.model.regions import classify
    assert classify(["linear", "matmul", "softmax", "matmul", "linear"]) == "attention"
    assert classify(["linear", "matmul", "masked_fill", "relu", "matmul", "linear"]) == "attention"  # ReLU attention
    assert classify(["linear", "relu", "linear"]) == "mlp"


def test_amdahl():
    assert analysis.amdahl([0.5]) == pytest.approx(2.0)
    assert analysis.amdahl([0.5, 0.25], [2.0, 1.0]) == pytest.approx(1 / 0.75)
    assert analysis.amdahl([1.0]) == float("inf")


def test_a_file_without_entry_points_is_a_clear_error(tmp_path):
    path = tmp_path / "nothing.py"
    path.write_text("import torch\nx = 1\n")
    with pytest.raises(loading.ModelFileError, match="defines no get_inputs"):
        loading.load(str(path), {})
    path.write_text("import torch\ndef get_inputs():\n    return []\n")
    with pytest.raises(loading.ModelFileError, match="defines no get_model"):
        loading.load(str(path), {})
    proc = subprocess.run([sys.executable, "-m", "kforge_worker.model", "analyze", str(path), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=REPO / "worker")
    assert proc.returncode == 2 and "defines no get_model()" in proc.stderr


LAMBDA_MODEL = '''
import torch
import torch.nn as nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.how = lambda x: x * 2.0   # no file can hold this

    def forward(self, x):
        return torch.relu(self.how(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(32)
        self.scaled = Scaled()
        self.fc = nn.Linear(32, 32)

    def forward(self, x):
        if x.sum() > -1e30:            # data-dependent: torch.export cannot capture it
            x = self.norm(x)
        return self.fc(self.scaled(x))


def get_model():
    return Net()


def get_inputs():
    return [torch.randn(8, 32)]
'''


def test_capture_failure_falls_back_and_a_bad_region_is_skipped(tmp_path):
    path = tmp_path / "net.py"
    path.write_text(LAMBDA_MODEL)
    result = analysis.analyze(str(path), {}, tmp_path / "out", reps=3, warmup=1)
    assert result["capture"]["method"] == "eager"
    assert result["capture"]["fallback_reason"].startswith("torch.export failed")
    regions = {r["instances"][0][0]: r for r in result["regions"]}
    assert set(regions) == {"norm", "scaled", "fc"}  # no graph, so no fused chains
    assert "scaled.how: a function attribute cannot be written" in regions["scaled"]["skipped"]
    assert "problem" not in regions["scaled"]
    assert Path(regions["norm"]["problem"]).is_file() and Path(regions["fc"]["problem"]).is_file()


WRAPPED_MODEL = '''
import torch
import torch.nn as nn


def as_module(fn):
    # A function made a module of a class defined in here, as transformers' `kernels` integration does
    class Wrapper(nn.Module):
        def forward(self, *args):
            return fn(*args)
    return Wrapper()


@as_module
def double(x):
    return x * 2.0


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.__dict__["_funcs"] = {"double": type(double)()}  # per-instance wrappers, not submodules

    def forward(self, x):
        return torch.relu(self._funcs["double"](x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scaled = Scaled()
        self.fc = nn.Linear(32, 32)

    def forward(self, x):
        return self.fc(self.scaled(x))


def get_model():
    return Net()


def get_inputs():
    return [torch.randn(8, 32)]
'''


def test_a_stateless_module_in_a_plain_attribute_is_rebuilt_from_its_class(tmp_path):
    path = tmp_path / "wrapped.py"
    path.write_text(WRAPPED_MODEL)
    result = analysis.analyze(str(path), {}, tmp_path / "out", reps=3, warmup=1)
    region = next(r for r in result["regions"] if r["instances"][0] == ["scaled"])
    assert "skipped" not in region, region["skipped"]
    text = Path(region["problem"]).read_text()
    assert "'_funcs': {'double': type(double)()}" in text
    mod = problem.load_problem(region["problem"], module_name="wrapped_region")
    x = mod.get_inputs()[0]
    torch.testing.assert_close(mod.Model()(x), torch.relu(x * 2.0), rtol=0, atol=0)


def finish_args(**kw):
    return Namespace(threads=1, reps=kw.get("reps", 5), no_compile=True, timeout=600)


@pytest.mark.slow
def test_kernels_installed_verified_and_measured(mini_gpt, tmp_path):
    """Hand-written kernels for two regions, one of them wrong: the right one is verified inside the
    whole model on fresh inputs; the wrong one never is, whatever it gains."""
    out, result = mini_gpt
    kinds = by_kind(result)
    (tmp_path / "gelu.py").write_text(kernel_source("linear_gelu.md"))
    wrong = kernel_source("layernorm.md").replace("yr[c] = (xr[c] - m) * inv * w[c] + b[c];",
                                                  "yr[c] = (xr[c] - m) * inv * w[c] + b[c] + 1e-2f;")
    (tmp_path / "norm.py").write_text(wrong)
    kernels = {kinds["gemm+epilogue"]["name"]: {"file": str(tmp_path / "gelu.py"), "speedup": 1.2},
               kinds["norm"]["name"]: {"file": str(tmp_path / "norm.py"), "speedup": 3.0}}
    report = finish.finish(out, kernels, finish_args())
    rows = {r["kind"]: r for r in report["regions"]}
    assert not rows["norm"]["installed"] and "outside tolerance" in rows["norm"]["why_not_installed"]
    assert rows["attention"]["why_not_installed"] == "not among the regions sent to the loop (--top)"
    gelu = rows["gemm+epilogue"]
    assert gelu["end_to_end_speedup_alone"] is not None
    assert gelu["installed"] == (gelu["end_to_end_speedup_alone"] > 1.0)  # its "run" said 1.2x
    page = report_mod.html(report)
    assert page.count("<svg") == 1 and "Amdahl bound" in page and "<td>region-" in page
    patch = (out / "patch.py").read_text()
    assert ("'region-" in patch) == gelu["installed"]
    if gelu["installed"]:
        assert report["verdict"]["correct"] and report["measured_speedup"]["median"] > 0
        # patch.py stands alone: the model made faster with nothing but torch and the file.
        code = ("import sys, torch; sys.path.insert(0, %r); import patch;"
                "from kforge_worker.model import loading;"
                "_, m, x, _ = loading.load(%r, {}); e = m(*x); patch.apply(m); print(type(m.mlp.c_fc).__name__,"
                " type(m.mlp.act).__name__, float((m(*x) - e).abs().max()))") % (str(out), str(MINI_GPT))
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO / "worker")
        name_fc, name_act, err = proc.stdout.split()
        assert (name_fc, name_act) == ("ModelNew", "Identity") and float(err) < 1e-4


def test_kernelbench_original_at_a_reduced_size(tmp_path):
    if not KERNELBENCH_GIT.is_dir():
        pytest.skip(f"no KernelBench mirror at {KERNELBENCH_GIT}")
    source = subprocess.run(["git", f"--git-dir={KERNELBENCH_GIT}", "show", "HEAD:KernelBench/level3/44_MiniGPTBlock.py"],
                            capture_output=True, text=True)
    if source.returncode != 0:
        pytest.skip("the KernelBench mirror has no level3/44_MiniGPTBlock.py")
    path = tmp_path / "44_MiniGPTBlock.py"
    path.write_text(source.stdout)
    result = analysis.analyze(str(path), SMALL, tmp_path / "out", reps=3, warmup=1)
    assert set(by_kind(result)) == {"attention", "gemm+epilogue", "gemm", "norm"}
    assert by_kind(result)["norm"]["inputs"][0]["shape"] == [2, 16, 32]


ENCODER_MODEL = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0)

    def forward(self, x):
        return self.layer(x)


def get_model():
    return Model()


def get_inputs():
    return [torch.randn(5, 2, 16)]
'''


def test_one_tensor_in_several_arguments_is_one_input_of_the_problem_and_of_the_kernel(tmp_path):
    """nn.TransformerEncoderLayer calls self_attn(x, x, x, ...): the region's problem takes x once
    and passes it three times, and patch.py uses the kernel only for calls that pass one tensor."""
    path = tmp_path / "encoder.py"
    path.write_text(ENCODER_MODEL)
    result = analysis.analyze(str(path), {}, tmp_path / "out", reps=3, warmup=1)
    region = next(r for r in result["regions"] if r["instances"][0] == ["layer.self_attn"])
    assert "skipped" not in region, region.get("skipped")
    assert [a["input"] for a in region["call"]["layout"]["args"]] == [0, 0, 0]
    mod = problem.load_problem(region["problem"], module_name="encoder_region")
    [x] = mod.get_inputs()
    block = mod.Model()
    torch.testing.assert_close(block(x), block.block(x, x, x, need_weights=False)[0], rtol=0, atol=0)

    # A kernel that counts its calls, as the region's best.py would be (the same module inside).
    kernel = ("import torch.nn as nn\nCALLS = []\n\nclass ModelNew(nn.Module):\n"
              "    def __init__(self):\n        super().__init__()\n"
              "        self.block = nn.MultiheadAttention(16, 2)\n\n"
              "    def forward(self, x):\n        CALLS.append(1)\n"
              "        return self.block(x, x, x, need_weights=False)[0]\n")
    patch_writer.write(str(tmp_path / "patch.py"), "encoder.py",
                       [{"region": region["name"], "instances": region["instances"], "source": kernel, "call": region["call"]}])
    spec = importlib.util.spec_from_file_location("patch_encoder", tmp_path / "patch.py")
    patch = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = patch
    spec.loader.exec_module(patch)
    _, model, inputs, _ = loading.load(str(path), {}, "cpu", result["seed"])
    _, want, _, _ = loading.load(str(path), {}, "cpu", result["seed"])
    patch.apply(model)
    attention = model.layer.self_attn
    calls = attention.kernel.forward.__globals__["CALLS"]
    with torch.no_grad():
        torch.testing.assert_close(model(*inputs), want(*inputs), rtol=1e-5, atol=1e-6)
        assert calls == [1]
        q, k = torch.randn(5, 2, 16), torch.randn(5, 2, 16)
        # query, key and value apart: not the problem's call, so the original module runs
        torch.testing.assert_close(attention(q, k, k, need_weights=False)[0],
                                   want.layer.self_attn(q, k, k, need_weights=False)[0], rtol=0, atol=0)
        assert calls == [1]


# KernelBench's 43_MinGPTCausalAttention in small: the model itself is the attention, written out in
# its forward around two Linears, and `super(Model, self)` names its class.
ATTENTION_IN_ITS_FORWARD = '''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, n_embd, n_head):
        super(Model, self).__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = F.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1))), dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


batch_size, seq_len, n_embd, n_head = 2, 8, 16, 2


def get_inputs():
    return [torch.randn(batch_size, seq_len, n_embd)]


def get_init_inputs():
    return [n_embd, n_head]
'''

# A kernel for that region: the same attention through scaled_dot_product_attention.
WHOLE_MODEL_KERNEL = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.block = nn.Module()
        self.block.c_attn = nn.Linear(16, 48)
        self.block.c_proj = nn.Linear(16, 16)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.block.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, 2, C // 2).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v)
        return self.block.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
'''


def test_a_model_that_computes_in_its_own_forward_is_one_region_installed_in_place(tmp_path):
    path = tmp_path / "attention.py"
    path.write_text(ATTENTION_IN_ITS_FORWARD)
    result = analysis.analyze(str(path), {}, tmp_path / "out", reps=3, warmup=1)
    [region] = result["regions"]  # not its two Linears with the matmuls and the softmax left to no region
    assert region["kind"] == "attention" and region["instances"] == [[""]]
    assert region["share"] > 0.9 and region["share"] + result["remainder_share"] == pytest.approx(1.0, abs=1e-9)
    text = Path(region["problem"]).read_text()
    assert "class SourceModel(nn.Module)" in text and "super(SourceModel, self)" in text
    mod = problem.load_problem(region["problem"], module_name="whole_model_region")
    _, model, _, _ = loading.load(str(path), {}, "cpu", result["seed"])
    inputs = mod.get_inputs()
    with torch.no_grad():
        torch.testing.assert_close(mod.Model()(*inputs), model(*inputs), rtol=0, atol=0)

    # Installed in place: the model's forward is the kernel's, its weights the model's.
    patch_writer.write(str(tmp_path / "out" / "patch.py"), path.name,
                       [{"region": region["name"], "instances": region["instances"], "source": WHOLE_MODEL_KERNEL}])
    code = ("import sys, torch; sys.path.insert(0, %r); import patch;"
            "from kforge_worker.model import loading;"
            "_, m, x, _ = loading.load(%r, {}); e = m(*x); patch.apply(m);"
            "print(type(m.kforge_kernel).__name__, float((m(*x) - e).abs().max()))") % (str(tmp_path / "out"), str(path))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO / "worker")
    assert proc.returncode == 0, proc.stderr
    name, err = proc.stdout.split()
    assert name == "ModelNew" and float(err) < 1e-5

    # Verified and measured inside the model as any region is: correct, and kept only if it pays off.
    (tmp_path / "kernel.py").write_text(WHOLE_MODEL_KERNEL)
    report = finish.finish(tmp_path / "out", {region["name"]: {"file": str(tmp_path / "kernel.py"), "speedup": 1.5}},
                           finish_args())
    [row] = report["regions"]
    assert row["end_to_end_speedup_alone"] is not None
    assert row["installed"] or row["why_not_installed"] == "not faster than eager end to end", row
    assert "| attention | the model itself | 1 |" in report_mod.markdown(report)
