"""What a trial-sized device allocation costs, beside the copy it holds: the fixed costs a device-path
trial pays for every buffer it creates, maps, frees or hands back, at a problem's own size.
    python bench/alloc_costs.py [--gib 6] [--reps 5] [--json OUT]
Run with the worker's interpreter on the GPU machine. Prints one line a step: median and spread (ms).
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "worker"))
from kforge_worker import device_buffers  # noqa: E402


def timed(fn, reps: int) -> list:
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        a = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append(1e3 * (time.perf_counter() - a))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=6.0)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    n = int(args.gib * (1 << 30))
    dev = torch.cuda.current_device()
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    steps = {}

    def fresh_empty():  # what the caching allocator pays after empty_cache: cudaMalloc, then cudaFree
        t = torch.empty(n, dtype=torch.uint8, device="cuda")
        del t
        torch.cuda.empty_cache()

    def cached_empty():  # a block the allocator still holds
        t = torch.empty(n, dtype=torch.uint8, device="cuda")
        del t

    cached_empty()
    steps["torch.empty, block cached"] = timed(cached_empty, args.reps)
    torch.cuda.empty_cache()
    steps["torch.empty + empty_cache (cudaMalloc + cudaFree)"] = timed(fresh_empty, args.reps)

    def vmm_allocate_close():
        device_buffers.allocate(n, dev).close()

    steps["VMM allocate (cuMemCreate, map, export fd) + close"] = timed(vmm_allocate_close, args.reps)
    buf = device_buffers.allocate(n, dev)

    def vmm_import_close():
        device_buffers.import_buffer(buf.fd, n, dev).close()

    steps["VMM import of an fd (map) + close"] = timed(vmm_import_close, args.reps)
    view = buf.bytes()
    steps["copy into a VMM buffer"] = timed(lambda: view.copy_(src), args.reps)
    steps["clone (torch allocation, block cached)"] = timed(lambda: src.clone(), args.reps)

    def clone_fresh():
        c = src.clone()
        del c
        torch.cuda.empty_cache()

    steps["clone + empty_cache"] = timed(clone_fresh, args.reps)
    steps["torch.equal"] = timed(lambda: torch.equal(src, view), args.reps)
    steps["synchronize alone"] = timed(lambda: None, args.reps)
    del view
    buf.close()

    result = {"device": torch.cuda.get_device_name(), "gib": args.gib, "reps": args.reps,
              "steps_ms": {k: {"median": statistics.median(v), "min": min(v), "max": max(v)} for k, v in steps.items()}}
    for k, v in result["steps_ms"].items():
        print(f"{k:55s} {v['median']:9.2f} ms  ({v['min']:.2f}-{v['max']:.2f})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
