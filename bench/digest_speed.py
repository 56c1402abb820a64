"""What tensors.digest costs at a real problem's size, side by side in one run with what bounds it:
one read of the bytes (a plain sum), torch.equal of two copies (two reads), a device copy, and the
previous digest (row and column sums of 32-bit words, two reads, kept here only for comparison).
    python bench/digest_speed.py [--gib 6] [--reps 5] [--device cuda]
Prints one line per operation: median and spread in ms, and the bandwidth it implies."""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "worker"))
from kforge_worker import tensors  # noqa: E402


def previous_digest(t: torch.Tensor) -> list:
    """The digest before the integer product: row and column sums of a 1024-column int32 view."""
    words = t.reshape(-1).view(torch.int32)
    row = 1024
    sums = torch.zeros(3, dtype=torch.int64, device=t.device)
    columns = torch.arange(1, row + 1, dtype=torch.int64, device=t.device)
    for start in range(0, words.numel(), 1 << 26):
        part = words[start:start + (1 << 26)]
        rows, first = part.numel() // row, start // row + 1
        body = part[:rows * row].view(rows, row)
        row_sums = body.sum(1, dtype=torch.int64)
        sums[0] += row_sums.sum()
        sums[1] += (row_sums * torch.arange(first, first + rows, dtype=torch.int64, device=t.device)).sum()
        sums[2] += (body.sum(0, dtype=torch.int64) * columns).sum()
    return sums.tolist()


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
    nbytes = x.numel() * 4
    ops = {
        "digest (integer product, one read)": lambda: tensors.digest(x),
        "previous digest (row and column sums)": lambda: previous_digest(x),
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
    assert tensors.digest(x) == tensors.digest(y)
    return 0


if __name__ == "__main__":
    sys.exit(main())
