"""The measuring process of `kforge model`: the user's model with some of the regions' kernels
installed (patch.py), run on fresh inputs, and timed against eager and torch.compile, all interleaved
in this one process so that drift hits every variant alike. The kernels are candidates: what this
process reports is a claim, so its outputs go back to the trusted side (finish.py), which checks them
against the model it runs itself; only the timings are taken from here."""

import importlib.util
import json
import random
import statistics
import sys
import time
import traceback
from typing import Dict, List

import torch

from kforge_worker.model import decoding, loading, profiling


def fresh_inputs(module, device: str, seed: int) -> list:
    torch.manual_seed(seed)
    return loading.to_device(list(module.get_inputs()), device)


def load_patch(path: str):
    spec = importlib.util.spec_from_file_location("kforge_model_patch", path)
    patch = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = patch  # torch.compile looks modules up by name
    spec.loader.exec_module(patch)
    return patch


def interval(samples: List[float]) -> dict:
    """Median and a 95% interval of the median (order statistics)."""
    s = sorted(samples)
    n = len(s)
    half = 0.98 * n ** 0.5
    lo, hi = max(0, int(n / 2 - half)), min(n - 1, int(n / 2 + half))
    return {"median": statistics.median(s), "low": s[lo], "high": s[hi], "n": n}


def compile_model(model, decode):
    """torch.compile; for a decoder with dynamic shapes from the start, so that the KV cache growing
    by a token a step does not recompile (a 16-layer decoder's compiles take minutes)."""
    return torch.compile(model, dynamic=True) if decode else torch.compile(model)


def _tokens_per_s(ms: dict, tokens: int) -> dict:
    """An interval of milliseconds as one of tokens per second (the bounds swap)."""
    return {"median": tokens / ms["median"] * 1e3, "low": tokens / ms["high"] * 1e3,
            "high": tokens / ms["low"] * 1e3, "n": ms["n"]}


def run(plan: dict) -> dict:
    from kforge_worker.common import session
    session.setup(plan["device"], plan.get("threads", 0))
    device, overrides = plan["device"], plan.get("overrides", {})
    patch = load_patch(plan["patch"]) if plan.get("patch") else None
    decode = plan.get("decode")

    def fresh_model():
        module, model, _, _ = loading.load(plan["model"], overrides, device, plan["seed"])
        return module, model

    module, eager = fresh_model()
    inputs = fresh_inputs(module, device, plan["fresh_seed"])
    steps = decoding.tokens(eager, decode["batch"], decode["steps"], plan["fresh_seed"], device) if decode else None
    sync = lambda: profiling.sync(device)  # noqa: E731
    variants: Dict[str, object] = {"eager": eager}
    result = {"variants": {}, "errors": {}}
    outputs = {}
    for config in plan["configs"]:
        name = config["name"]
        try:
            _, model = fresh_model()  # a fresh copy: a closure in the model may hold its modules
            patch.apply(model, config["regions"], custom_ops=config.get("custom_ops", False))
            if config.get("compile"):
                model = compile_model(model, decode)
            with torch.no_grad():
                outputs[name] = decoding.plain(model(*inputs))
            if decode:
                outputs[name + " decode"] = decoding.decode(model, inputs[0], steps, decode["cache_argument"], sync)[1]
            variants[name] = model
        except Exception as e:
            result["errors"][name] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"
    if plan.get("compile"):
        try:
            _, compiled = fresh_model()
            compiled = compile_model(compiled, decode)
            with torch.no_grad():
                compiled(*inputs)
            if decode:
                decoding.decode(compiled, inputs[0], steps, decode["cache_argument"], sync)
            variants["torch.compile"] = compiled
        except Exception as e:
            result["errors"]["torch.compile"] = f"{type(e).__name__}: {str(e)[:500]}"
    torch.save(outputs, plan["outputs"])

    names = list(variants)
    samples = {n: [] for n in names}
    decode_samples = {n: [] for n in names}
    rng = random.Random(0)
    with torch.no_grad():
        for name in names:
            for _ in range(plan.get("warmup", 2)):
                variants[name](*inputs)
            if decode:
                decoding.decode(variants[name], inputs[0], steps, decode["cache_argument"], sync)
        for _ in range(plan.get("reps", 20)):
            rng.shuffle(names)  # each rep runs every variant once, in a new order
            for name in names:
                sync()
                t = time.perf_counter()
                variants[name](*inputs)
                sync()
                samples[name].append((time.perf_counter() - t) * 1e3)
            if decode:
                rng.shuffle(names)
                for name in names:
                    decode_samples[name].append(decoding.decode(variants[name], inputs[0], steps,
                                                                decode["cache_argument"], sync)[0])
    for name, ms in samples.items():
        entry = {"ms": interval(ms), "samples_ms": ms}
        if name != "eager":
            entry["speedup_vs_eager"] = interval([e / m for e, m in zip(samples["eager"], ms)])
        if decode:
            # Prefill: the profiled forward over the prompt; decode: the single-token steps.
            entry["prefill_tokens_per_s"] = _tokens_per_s(entry["ms"], decode["batch"] * decode["prompt"])
            dms = decode_samples[name]
            entry["decode_ms"] = interval(dms)
            entry["decode_samples_ms"] = dms
            entry["decode_tokens_per_s"] = _tokens_per_s(entry["decode_ms"], decode["batch"] * decode["steps"])
            if name != "eager":
                entry["decode_speedup_vs_eager"] = interval([e / m for e, m in zip(decode_samples["eager"], dms)])
        result["variants"][name] = entry
    return result


def main(plan_path: str) -> int:
    with open(plan_path) as f:
        plan = json.load(f)
    result = run(plan)
    with open(plan["result"], "w") as f:
        json.dump(result, f, indent=2)
    return 0
