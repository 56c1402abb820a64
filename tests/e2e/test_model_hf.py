"""`kforge model --hf-config`: a Hugging Face decoder (a tiny Llama, a few hundred KB) built from its
config with random weights, profiled and cut into regions (RMSNorm, gated MLP, attention, rotary),
its attention and RMSNorm regions through the loop with scripted answers (tests/e2e/scripted/hf_llama), installed,
verified on the prefill and on the KV-cache decode steps, and measured as prefill and decode tokens/s."""

import json
import subprocess
import sys

import pytest

from e2e_support import HERE

pytest.importorskip("transformers", reason="--hf-config needs transformers (worker/requirements.txt)")

SCRIPTED = HERE / "scripted"
TINY_LLAMA = ["--hf-config", "llama", "--set", "hidden_size=64", "--set", "intermediate_size=128",
              "--set", "num_hidden_layers=2", "--set", "num_attention_heads=4", "--set", "num_key_value_heads=2",
              "--set", "vocab_size=256", "--set", "seq_len=16", "--set", "batch_size=2", "--set", "decode_steps=4"]
QUICK = ["--target", "cpu", "--threads", "1", "--no-e2e-compile", "--e2e-reps", "5", "--profile-reps", "3",
         "--rounds", "1", "--max-fix", "0", "--seed", "3", "--no-compile-baseline", "--no-profile",
         "--run-arg=--eval-reps", "--run-arg=5", "--run-arg=--eval-warmup", "--run-arg=1",
         "--run-arg=--eval-trials", "--run-arg=2"]


def test_hf_llama_from_config_regions_prefill_and_decode(kforge):
    log = kforge.tmp / "calls.jsonl"
    llm = f"exec:{sys.executable} {SCRIPTED / 'model.py'} {SCRIPTED / 'hf_llama' / 'plan.json'} {log}"
    proc = kforge.run("model", *TINY_LLAMA, *QUICK, "--llm", llm, "--top", "2", "--json", kforge.tmp / "report.json",
                      timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = kforge.tmp / "kforge-out" / "model-1"
    report = json.loads((kforge.tmp / "report.json").read_text())
    assert report["capture"]["method"] == "torch.export"
    kinds = {}
    for r in report["regions"]:
        kinds.setdefault(r["kind"], []).append(r)
    assert {"attention", "norm", "mlp", "rotary", "gemm"} <= set(kinds)
    # Every RMSNorm of the decoder is one problem; the two gated MLPs are another.
    (norm,) = kinds["norm"]
    assert norm["instances"] == [["model.layers.0.input_layernorm"], ["model.layers.0.post_attention_layernorm"],
                                 ["model.layers.1.input_layernorm"], ["model.layers.1.post_attention_layernorm"],
                                 ["model.norm"]]
    (mlp,) = kinds["mlp"]
    assert mlp["instances"] == [["model.layers.0.mlp"], ["model.layers.1.mlp"]] and mlp["problem"]
    # Attention and rotary take keyword arguments: problems through their call's layout. The
    # attention went through the loop (answered without a kernel) and stays with PyTorch.
    (attention,) = kinds["attention"]
    assert attention["instances"] == [["model.layers.0.self_attn"], ["model.layers.1.self_attn"]]
    assert attention["problem"] and not attention.get("skipped") and kinds["rotary"][0]["problem"]
    assert attention["run"] and attention["kernel_speedup"] is None and not attention["installed"]
    # The RMSNorm kernel went through a run and is correct on the prefill and on the decode steps.
    assert norm["run"] and norm["kernel_speedup"] is not None, norm
    assert norm["installed"] == (norm["end_to_end_speedup_alone"] > 1.0 and norm["kernel_speedup"] > 1.0), norm
    measured = json.loads((out / "e2e-all.json").read_text())
    verdict = measured["verdicts"]["kforge"]
    assert verdict["correct"] is True and verdict["decode"]["max_abs_error"] < 1e-4, verdict
    assert verdict["audit"]["ratio"] <= 1 and verdict["decode"]["audit"]["ratio"] <= 1, verdict
    # Prefill and decode, in tokens per second, for every variant.
    assert report["decode"] == {"steps": 4, "cache_argument": report["decode"]["cache_argument"], "batch": 2, "prompt": 16}
    for name, v in report["variants"].items():
        for key in ("prefill_tokens_per_s", "decode_tokens_per_s"):
            assert v[key]["low"] <= v[key]["median"] <= v[key]["high"] and v[key]["median"] > 0, (name, key)
    md = (out / "report.md").read_text()
    assert "| Variant | Prefill ms | Prefill tokens/s | Prefill speedup | Decode ms | Decode tokens/s | Decode speedup |" in md
    # The model file kforge wrote builds the same decoder on its own.
    code = (f"import sys; sys.path.insert(0, {str(out)!r}); import hf_model\n"
            "m = hf_model.get_model(); print(type(m).__name__, m.config.hidden_size, m.config.num_hidden_layers)\n")
    built = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert built.stdout.split() == ["LlamaForCausalLM", "64", "2"], built.stderr


def test_hf_config_bad_input_is_a_clear_error_and_writes_nothing(kforge):
    unknown = kforge.run("model", "--hf-config", "lama", "--target", "cpu", "--top", "0")
    assert unknown.returncode == 2, unknown.stdout + unknown.stderr
    assert "not an architecture transformers" in unknown.stderr and "did you mean llama" in unknown.stderr
    bad_key = kforge.run("model", "--hf-config", "llama", "--set", "hiden_size=64", "--target", "cpu", "--top", "0")
    assert bad_key.returncode == 2, bad_key.stdout + bad_key.stderr
    assert "--set hiden_size=64: not a key of LlamaConfig" in bad_key.stderr and "hidden_size" in bad_key.stderr
    bad_value = kforge.run("model", "--hf-config", "llama", "--set", "seq_len=0", "--target", "cpu", "--top", "0")
    assert bad_value.returncode == 2 and "expected a positive integer" in bad_value.stderr
    both = kforge.run("model", kforge.tmp / "x.py", "--hf-config", "llama", "--target", "cpu", "--top", "0")
    assert both.returncode == 2 and "not both" in both.stderr
    assert not (kforge.tmp / "kforge-out").exists()  # nothing written for a refused command
