"""What tensors.digest costs at a real problem's size, side by side in one run with what bounds it:
one read of the bytes (a plain sum), torch.equal of two copies (two reads), a device copy, and the
same digest by the operator path (torch._int_mm), which the kernel (device_digest) replaces on a GPU.
    python bench/digest_speed.py [--gib 6] [--reps 5] [--device cuda]
Prints one line per operation: median and spread in ms, and the bandwidth it implies."""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "worker"))
from kforge_worker import device_digest, tensors  # noqa: E402


def by_integer_product(t: torch.Tensor) -> list:
    """The digest as the operator path computes it (torch._int_mm), the kernel set aside."""
    kernel = device_digest.sums
    device_digest.sums = lambda flat, weights: None
    try:
        return tensors.digest(t)
    finally:
        device_digest.sums = kernel


def timed(fn, reps: int, sync) -> list:
    fn()
    sync()
    out = []
    for _ in range(reps):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        out.append((time.perf_counter() - start) * 1e3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=6.0)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    n = int(args.gib * (1 << 30)) // 4
    x = torch.randn(n, device=dev)
    y = x.clone()
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    # A process's first digest pays for the path's setup: cuBLASLt's for the product, NVRTC (or the
    # build cache) and the module load for the kernel.
    small = x[:1 << 20]
    for label, fn in (("first digest by the operator path", lambda: by_integer_product(small)),
                      ("first digest as kforge computes it", lambda: tensors.digest(small))):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        print(f"{label:44s} {(time.perf_counter() - start) * 1e3:8.1f} ms (of 4 MiB)")
    nbytes = x.numel() * 4
    ops = {
        "digest (as kforge computes it here)": lambda: tensors.digest(x),
        "digest by the operator path (torch._int_mm)": lambda: by_integer_product(x),
        "one read (sum of int32 words into int64)": lambda: x.view(torch.int32).sum(dtype=torch.int64).item(),
        "torch.equal of two copies (two reads)": lambda: torch.equal(x, y),
        "copy (one read, one write)": lambda: y.copy_(x),
    }
    print(f"{nbytes / (1 << 30):.2f} GiB on {name}, torch {torch.__version__}, {args.reps} repetitions")
    for label, fn in ops.items():
        ms = timed(fn, args.reps, sync)
        med = statistics.median(ms)
        print(f"{label:44s} median {med:8.2f} ms  (min {min(ms):.2f}, max {max(ms):.2f})  "
              f"{nbytes / med / 1e6:8.1f} GB/s of the tensor's bytes")
    assert tensors.digest(x) == tensors.digest(y) == by_integer_product(x)
    print("kernel:", "in use" if dev.type == "cuda" and device_digest.unavailable_reason() is None
          else f"not used ({device_digest.unavailable_reason() or dev.type})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
