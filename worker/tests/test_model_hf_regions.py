"""A Hugging Face decoder's regions (a tiny Llama from its config): attention and rotary are called
with keyword arguments, written as problems through their call's layout, and a kernel for the
attention goes back into the model through patch.py: used where a call fits the layout (the
prefill), the original module where it does not (decode steps pass a KV cache); as a custom op,
torch.compile keeps it in the graph."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers", reason="--hf-config needs transformers (worker/requirements.txt)")

from kforge_worker.model import analysis, decoding, hf_config, loading, patch_writer  # noqa: E402

TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 256, "seq_len": 16, "batch_size": 2, "decode_steps": 3}

# Llama attention written out: projections, rotary on q and k, grouped KV heads, causal SDPA. It
# counts its calls, so the tests see where it ran.
ATTENTION = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

CALLS = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Module()
        self.block.q_proj = nn.Linear(64, 64, bias=False)
        self.block.k_proj = nn.Linear(64, 32, bias=False)
        self.block.v_proj = nn.Linear(64, 32, bias=False)
        self.block.o_proj = nn.Linear(64, 64, bias=False)

    def forward(self, x, cos, sin, position_ids):
        CALLS.append(tuple(x.shape))
        b, s, _ = x.shape
        q = self.block.q_proj(x).view(b, s, 4, 16).transpose(1, 2)
        k = self.block.k_proj(x).view(b, s, 2, 16).transpose(1, 2)
        v = self.block.v_proj(x).view(b, s, 2, 16).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        half = lambda t: torch.cat((-t[..., 8:], t[..., :8]), dim=-1)
        q, k = q * cos + half(q) * sin, k * cos + half(k) * sin
        k, v = k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25)
        return self.block.o_proj(out.transpose(1, 2).reshape(b, s, 64))
'''


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny_llama")
    torch.set_num_threads(1)
    path = hf_config.write("llama", TINY, "cpu", out / "hf_model.py")
    return path, analysis.analyze(str(path), {}, out, reps=2, warmup=1)


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_attention_and_rotary_with_keyword_arguments_are_problems(tiny):
    path, result = tiny
    kinds = {r["kind"]: r for r in result["regions"]}
    assert {"attention", "norm", "mlp", "rotary", "gemm"} <= set(kinds)
    # The two layers' attentions are one problem (their layer_idx only indexes the KV cache).
    assert kinds["attention"]["instances"] == [["model.layers.0.self_attn"], ["model.layers.1.self_attn"]]
    assert kinds["attention"]["call"]["layout"]["kwargs"]["cache"] == {"const": None}
    assert kinds["attention"]["call"]["output"] == {"tuple": [{"input": 0}, {"const": None}]}
    _, model, _, _ = loading.load(str(path), {}, "cpu", result["seed"])
    modules = dict(model.named_modules())
    for kind in ("attention", "rotary"):
        region = kinds[kind]
        assert "skipped" not in region, region
        problem = load(Path(region["problem"]), f"problem_{kind}")
        torch.manual_seed(1)
        inputs = problem.get_inputs()
        got = problem.Model(*problem.get_init_inputs())(*inputs)
        # The problem computes what the model's own module computes on the same call.
        layout = region["call"]["layout"]
        rebuild = lambda leaf: (inputs[leaf["input"]] if "input" in leaf else leaf["const"] if "const" in leaf  # noqa: E731
                                else tuple(rebuild(v) for v in leaf["tuple"]))
        want = modules[region["instances"][0][0]](*[rebuild(a) for a in layout["args"]],
                                                 **{k: rebuild(v) for k, v in layout["kwargs"].items()})
        want = want[0] if kind == "attention" else want
        torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_an_attention_kernel_goes_back_for_the_prefill_and_leaves_decode_to_the_original(tiny, tmp_path):
    path, result = tiny
    region = next(r for r in result["regions"] if r["kind"] == "attention")
    patch_writer.write(str(tmp_path / "patch.py"), "hf_model.py",
                       [{"region": region["name"], "instances": region["instances"], "source": ATTENTION,
                         "call": region["call"]}])
    patch = load(tmp_path / "patch.py", "patch_attention")
    module, want_model, _, _ = loading.load(str(path), {}, "cpu", result["seed"])
    _, model, _, _ = loading.load(str(path), {}, "cpu", result["seed"])
    patch.apply(model)
    calls = model.model.layers[0].self_attn.kernel.forward.__globals__["CALLS"]
    # What the model reads of the replaced module around its call (nn.TransformerEncoderLayer reads
    # self_attn.batch_first) is the original's.
    original = want_model.model.layers[1].self_attn
    assert (model.model.layers[1].self_attn.layer_idx, model.model.layers[1].self_attn.head_dim) == \
        (original.layer_idx, original.head_dim) == (1, 16)
    prompt = module.get_inputs()[0]
    with torch.no_grad():
        torch.testing.assert_close(model(prompt).logits, want_model(prompt).logits, atol=1e-5, rtol=1e-4)
    assert calls == [(2, 16, 64)] * 2  # both layers, in the prefill
    steps = decoding.tokens(model, 2, 3, 7, "cpu")
    arg = decoding.cache_argument(model)
    _, got = decoding.decode(model, prompt, steps, arg)
    _, want = decoding.decode(want_model, prompt, steps, arg)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    # The decode's prefill (use_cache=True: a cache is passed) and its steps went to the original.
    assert calls == [(2, 16, 64)] * 2

    # As a custom op, torch.compile keeps the kernel in the graph where a call fits its layout: the
    # region's own problem (the fake implementation runs the original attention on fake tensors,
    # through the layout). The whole decoder compiled passes a materialised causal mask (transformers
    # does under dynamo), which does not fit: the original attention runs, and the output is right.
    problem = load(Path(region["problem"]), "problem_attention_compiled")
    reference = problem.Model()
    torch.manual_seed(2)
    inputs = problem.get_inputs()
    patched = problem.Model()
    patch_writer.write(str(tmp_path / "patch_block.py"), "region.py",
                       [{"region": region["name"], "instances": [["block"]], "source": ATTENTION, "call": region["call"]}])
    load(tmp_path / "patch_block.py", "patch_attention_block").apply(patched, custom_ops=True)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        return gm

    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(patched, backend=backend, fullgraph=True)(*inputs)
        torch.testing.assert_close(got, reference(*inputs), atol=1e-5, rtol=1e-4)
    assert [t for g in graphs for t in g if t.startswith("kforge.")] != [], graphs

    _, compiled_model, _, _ = loading.load(str(path), {}, "cpu", result["seed"])
    patch.apply(compiled_model, custom_ops=True)
    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(compiled_model, backend="aot_eager")(prompt).logits
    torch.testing.assert_close(got, want_model(prompt).logits, atol=1e-5, rtol=1e-4)
