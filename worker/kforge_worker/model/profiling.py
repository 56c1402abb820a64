"""Where the model's time goes: the whole forward timed alone, then each region's calls timed by
hooks around its modules, so a region's share is its time over the whole forward's. What the regions
do not cover (the additions between them, views) is the remainder, so the shares add up to 1."""

import statistics
import time
from typing import Dict, List

import torch

from kforge_worker.model import call_layout
from kforge_worker.model.regions import Region


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def spec(value) -> dict:
    """What a region's input is, enough to draw another like it."""
    if isinstance(value, torch.Tensor):
        out = {"tensor": True, "shape": list(value.shape), "dtype": str(value.dtype).replace("torch.", "")}
        if not value.dtype.is_floating_point and not value.dtype.is_complex and value.numel():
            out["low"], out["high"] = int(value.min()), int(value.max())
        return out
    return {"tensor": False, "value": value}


def call_order(model: torch.nn.Module, inputs: list) -> List[str]:
    """Module paths in the order they first run."""
    order: List[str] = []
    seen = set()
    handles = []
    for p, m in model.named_modules():
        if p:
            def pre(mod, args, p=p):
                if p not in seen:
                    seen.add(p)
                    order.append(p)
            handles.append(m.register_forward_pre_hook(pre))
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return order


def profile(model: torch.nn.Module, inputs: list, regions: List[Region], device: str,
            reps: int = 10, warmup: int = 2) -> dict:
    """Fills each region's ``calls`` (input specs per call) and returns the timings:
    {"total_ms", "total_samples_ms", "region_ms" (per region: median ms per forward), "remainder_ms",
    "scaled"}. Each repetition runs the forward once with the region hooks timing and once with them
    idle, so that both see the same load on the machine."""
    modules = dict(model.named_modules())
    per_rep: List[List[float]] = [[0.0] * len(regions) for _ in range(reps)]
    state = {"rep": -1, "start": {}}
    handles = []
    for i, region in enumerate(regions):
        first, last = modules[region.paths[0]], modules[region.paths[-1]]

        def pre(mod, args, kwargs, i=i, region=region):
            if state["rep"] == -1:
                return None
            if state["rep"] == -2:  # the recording call
                call = {"specs": [spec(a) for a in args], "kwargs": sorted(kwargs)}
                # The problem's inputs are the call's tensors, wherever they are (call_layout.py).
                if kwargs or call_layout.aliased(args):
                    try:
                        call["layout"], tensors = call_layout.of_call(args, kwargs)
                        call["specs"] = [spec(t) for t in tensors]
                    except call_layout.LayoutError as e:
                        call["layout_error"] = str(e)
                region.calls.append(call)
            sync(device)
            state["start"][i] = time.perf_counter()
            return None

        def post(mod, args, output, i=i, region=region):
            if state["rep"] == -2 and region.calls and "layout" in region.calls[-1]:
                try:
                    region.calls[-1]["output"] = call_layout.of_output(output)
                except call_layout.LayoutError as e:
                    region.calls[-1]["layout_error"] = str(e)
            if state["rep"] >= 0 and i in state["start"]:
                sync(device)
                per_rep[state["rep"]][i] += (time.perf_counter() - state["start"].pop(i)) * 1e3
            return None

        handles.append(first.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(last.register_forward_hook(post))
    total: List[float] = []
    hooked: List[float] = []
    try:
        with torch.no_grad():
            state["rep"] = -2
            model(*inputs)
            state["rep"] = -1
            for _ in range(warmup):
                model(*inputs)
            for r in range(reps):
                state["rep"] = r
                sync(device)
                t = time.perf_counter()
                model(*inputs)
                sync(device)
                hooked.append((time.perf_counter() - t) * 1e3)
                state["rep"] = -1
                sync(device)
                t = time.perf_counter()
                model(*inputs)
                sync(device)
                total.append((time.perf_counter() - t) * 1e3)
    finally:
        for h in handles:
            h.remove()
    total_ms = statistics.median(total)
    # A region's share is of the forward it was timed in (the regions are disjoint parts of it, so
    # the shares cannot pass 1); its milliseconds are that share of the plain forward's time.
    shares = [statistics.median(rep[i] / h for rep, h in zip(per_rep, hooked)) for i in range(len(regions))]
    if sum(shares) > 1.0:  # medians of ratios can, barely
        shares = [f / sum(shares) for f in shares]
    region_ms = [f * total_ms for f in shares]
    return {"total_ms": total_ms, "total_samples_ms": total, "hooked_samples_ms": hooked, "region_ms": region_ms,
            "shares": shares, "remainder_ms": max(0.0, total_ms - sum(region_ms)),
            "hook_overhead_ms": statistics.median(hooked) - total_ms}
