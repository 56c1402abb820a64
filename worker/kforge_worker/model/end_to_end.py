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

from kforge_worker.model import loading, profiling


def fresh_inputs(module, device: str, seed: int) -> list:
    torch.manual_seed(seed)
    return loading.to_device(list(module.get_inputs()), device)


def load_patch(path: str):
    spec = importlib.util.spec_from_file_location("kforge_model_patch", path)
    patch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(patch)
    return patch


def interval(samples: List[float]) -> dict:
    """Median and a 95% interval of the median (order statistics)."""
    s = sorted(samples)
    n = len(s)
    half = 0.98 * n ** 0.5
    lo, hi = max(0, int(n / 2 - half)), min(n - 1, int(n / 2 + half))
    return {"median": statistics.median(s), "low": s[lo], "high": s[hi], "n": n}


def run(plan: dict) -> dict:
    from kforge_worker import session
    session.setup(plan["device"], plan.get("threads", 0))
    device, overrides = plan["device"], plan.get("overrides", {})
    patch = load_patch(plan["patch"]) if plan.get("patch") else None

    def fresh_model():
        module, model, _, _ = loading.load(plan["model"], overrides, device, plan["seed"])
        return module, model

    module, eager = fresh_model()
    inputs = fresh_inputs(module, device, plan["fresh_seed"])
    variants: Dict[str, object] = {"eager": eager}
    result = {"variants": {}, "errors": {}}
    outputs = {}
    for config in plan["configs"]:
        try:
            _, model = fresh_model()  # a fresh copy: a closure in the model may hold its modules
            patch.apply(model, config["regions"])
            with torch.no_grad():
                outputs[config["name"]] = model(*inputs)
            variants[config["name"]] = model
        except Exception as e:
            result["errors"][config["name"]] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"
    if plan.get("compile"):
        try:
            _, compiled = fresh_model()
            compiled = torch.compile(compiled)
            with torch.no_grad():
                compiled(*inputs)
            variants["torch.compile"] = compiled
        except Exception as e:
            result["errors"]["torch.compile"] = f"{type(e).__name__}: {str(e)[:500]}"
    torch.save(outputs, plan["outputs"])

    names = list(variants)
    samples = {n: [] for n in names}
    rng = random.Random(0)
    with torch.no_grad():
        for name in names:
            for _ in range(plan.get("warmup", 2)):
                variants[name](*inputs)
        for _ in range(plan.get("reps", 20)):
            rng.shuffle(names)  # each rep runs every variant once, in a new order
            for name in names:
                profiling.sync(device)
                t = time.perf_counter()
                variants[name](*inputs)
                profiling.sync(device)
                samples[name].append((time.perf_counter() - t) * 1e3)
    for name, ms in samples.items():
        entry = {"ms": interval(ms), "samples_ms": ms}
        if name != "eager":
            entry["speedup_vs_eager"] = interval([e / m for e, m in zip(samples["eager"], ms)])
        result["variants"][name] = entry
    return result


def main(plan_path: str) -> int:
    with open(plan_path) as f:
        plan = json.load(f)
    result = run(plan)
    with open(plan["result"], "w") as f:
        json.dump(result, f, indent=2)
    return 0
