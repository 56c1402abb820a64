"""What a trial's output check costs at a problem's own size, with the one-pass GPU statistics
(kforge_worker.device_compare) and with the operator path alone, side by side in one process:
compare.compare and the tightened check (calibration.scaled_check) of a candidate's outputs that
differ from the reference's within tolerance (a softmax's case), and of identical ones.
    python bench/compare_costs.py [--gib 6] [--dtype float32] [--reps 5] [--json OUT]
Run with the worker's interpreter on the GPU machine. Prints one line a step: median and spread (ms),
and the effective read bandwidth (both tensors once) of the one-pass kernel.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "worker"))
from kforge_worker import calibration, compare, device_compare  # noqa: E402
from alloc_costs import timed  # noqa: E402  (this folder: each step synchronised around, in ms)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=6.0, help="size of each of the two tensors")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    n = int(args.gib * (1 << 30)) // torch.finfo(dtype).bits * 8
    expected = torch.randn(n, device="cuda", dtype=dtype)
    got = expected.to(torch.float32, copy=True).mul_(1 + torch.finfo(dtype).eps).to(dtype)  # a rounding apart
    same = expected.clone()
    assert not torch.equal(expected, got)
    usable = device_compare.usable
    steps = {}
    for path in ("one_pass", "operators"):
        device_compare.usable = usable if path == "one_pass" else (lambda *a: False)
        steps[f"{path} compare (differs)"] = timed(lambda: compare.compare(expected, got), args.reps)
        steps[f"{path} tightened check (differs)"] = timed(lambda: calibration.scaled_check(expected, got), args.reps)
        steps[f"{path} compare (identical)"] = timed(lambda: compare.compare(expected, same), args.reps)
    device_compare.usable = usable
    steps["one_pass stats kernel"] = timed(lambda: device_compare.stats(expected, got, 1e-4), args.reps)
    report = {"device": torch.cuda.get_device_name(), "dtype": args.dtype, "elements": n,
              "bytes_each": n * expected.element_size(), "one_pass_unavailable": device_compare.unavailable_reason(),
              "steps_ms": steps}
    for name, ms in steps.items():
        print(f"{name:42s} median {statistics.median(ms):8.2f} ms  [{min(ms):.2f}, {max(ms):.2f}]")
    kernel = statistics.median(steps["one_pass stats kernel"]) / 1e3
    print(f"one-pass kernel reads {2 * report['bytes_each'] / kernel / 1e12:.2f} TB/s "
          f"({report['device']}, {args.dtype}, 2 x {report['bytes_each'] / 2**30:.1f} GiB)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
