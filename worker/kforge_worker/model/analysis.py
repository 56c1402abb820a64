"""`python -m kforge_worker.model analyze`: the model profiled, captured, cut into regions that are
written as problems, ranked by their share of the time, with the Amdahl bound (analysis.json)."""

import json
from pathlib import Path
from typing import Dict, List

import torch

from kforge_worker.common import problem
from kforge_worker.model import capture as capture_mod
from kforge_worker.model import decoding, loading, problem_writer, profiling, regions as regions_mod


def amdahl(shares: List[float], speedups: List[float] = None) -> float:
    """The whole model's speedup when regions with these shares run ``speedups`` times faster
    (infinitely faster without them: the bound)."""
    if speedups is None:
        rest = 1.0 - sum(shares)
        return float("inf") if rest <= 0 else 1.0 / rest
    return 1.0 / (1.0 - sum(shares) + sum(f / s for f, s in zip(shares, speedups)))


def analyze(path: str, overrides: Dict[str, object], out_dir: Path, device: str = "cpu", reps: int = 10,
            warmup: int = 2, seed: int = 0) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    module, model, inputs, entry = loading.load(path, overrides, device, seed)
    source = Path(path).read_text()
    from kforge_worker.roles import describe
    source = describe.source_as_run(path, overrides) if overrides else source
    try:
        with torch.no_grad():
            model(*inputs)
    except Exception as e:
        raise loading.ModelFileError(f"the model does not run on {device} at its inputs: {type(e).__name__}: {e}") from e
    captured = capture_mod.capture(model, inputs)
    order = profiling.call_order(model, inputs)
    found = regions_mod.select(model, captured, order)
    timing = profiling.profile(model, inputs, found, device, reps, warmup)
    total = timing["total_ms"]

    # One problem per distinct region (same pattern, same shapes), its calls and time summed.
    groups: Dict[str, dict] = {}
    for region, ms in zip(found, timing["region_ms"]):
        key = regions_mod.region_key(model, region, region.calls[0]) if region.calls else f"never:{region.paths}"
        g = groups.setdefault(key, {"key": key, "kind": region.kind, "instances": [], "ms": 0.0, "calls": 0,
                                    "ops": sorted(set(region.ops) - regions_mod.VIEWS), "region": region})
        g["instances"].append(region.paths)
        g["ms"] += ms
        g["calls"] += len(region.calls)
    ranked = sorted(groups.values(), key=lambda g: -g["ms"])
    out_regions, skipped = [], []
    for index, g in enumerate(ranked, 1):
        share = g["ms"] / total if total > 0 else 0.0
        entry_json = {"index": index, "name": f"region-{index}", "kind": g["kind"], "instances": g["instances"],
                      "calls": g["calls"], "ms": g["ms"], "share": share, "ops": g["ops"],
                      "inputs": g["region"].calls[0]["specs"] if g["region"].calls else []}
        first_call = g["region"].calls[0] if g["region"].calls else {}
        if "layout" in first_call and "output" in first_call:  # keyword arguments: how patch.py calls the kernel
            entry_json["call"] = {"layout": first_call["layout"], "output": first_call["output"]}
        try:
            files = problem_writer.write(g["region"], index, model, Path(path).name, source, share,
                                         g["calls"], out_dir / "regions")
            entry_json.update(files)
        except problem_writer.RegionError as e:
            entry_json["skipped"] = str(e)
            skipped.append(entry_json)
        out_regions.append(entry_json)
    shares = [r["share"] for r in out_regions if "problem" in r]
    result = {
        "schema": 1, "model": str(Path(path).resolve()), "entry": entry, "overrides": overrides, "device": device,
        "seed": seed,
        "inputs": [profiling.spec(v) for v in inputs],
        "capture": {"method": captured.method, "fallback_reason": captured.fallback_reason},
        "eager_ms": total, "eager_samples_ms": timing["total_samples_ms"], "remainder_ms": timing["remainder_ms"],
        "remainder_share": timing["remainder_ms"] / total if total > 0 else 0.0,
        "hook_overhead_ms": timing["hook_overhead_ms"],
        "regions": out_regions,
        # A decoder's end-to-end measure adds single-token steps with a KV cache (decoding.py).
        "decode": decoding.settings(module, model, inputs),
        "amdahl_bound": None if amdahl(shares) == float("inf") else amdahl(shares),  # None: unbounded
    }
    (out_dir / "analysis.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    return result


def main(args) -> int:
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    from kforge_worker.common import session
    session.setup(args.device, args.threads)
    analyze(args.model, problem.parse_sets(args.set), out_dir, args.device, args.reps, args.warmup, args.seed)
    return 0
