"""Null-kernel calibration and speed-of-light figures for every bundled example problem.

    .venv/bin/python bench/calibration_report.py [PROBLEM.py ...] > bench/results/$(date +%Y%m%d)-$(hostname)-calibration.md

Runs in the trusted worker code directly (no candidate): for each problem it reports which null
kernels pass the default check and whether kforge tightens it, whether the problem is degenerate,
and FLOPs, minimum bytes, the device's measured peaks and the speed-of-light time.
"""

import glob
import os
import platform
import socket
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "worker"))

import torch  # noqa: E402

from kforge_worker.roles.reference import ReferenceSession  # noqa: E402
from kforge_worker import backends  # noqa: E402
from kforge_worker.checks import sol

CACHE = os.environ.get("KFORGE_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "kforge"))


def main(paths):
    shared = tempfile.mkdtemp(prefix="kforge-calibration-")
    peaks = sol.device_peaks("cpu", os.path.join(CACHE, "peaks"))
    print(f"# Null-kernel calibration and speed of light\n")
    print(f"machine: {socket.gethostname()}, {backends.cpu.model_name()}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}, python {platform.python_version()}\n")
    print("peaks (measured, cached: {}): fp32 {:.1f} GFLOP/s, fp64 {:.1f} GFLOP/s, bf16 {:.1f} GFLOP/s; copy bandwidth {}\n"
          .format(peaks.get("cached"), peaks["flops"]["float32"] / 1e9, peaks["flops"]["float64"] / 1e9,
                  peaks["flops"]["bfloat16"] / 1e9,
                  ", ".join(f"{lv['bytes_per_s'] / 1e9:.1f} GB/s @ {lv['working_set_bytes'] >> 10} KiB"
                            for lv in peaks["bandwidth"])))
    print("| problem | nulls passing default check | tightened | still passing | degenerate | GFLOP | MB | bound | SOL ms | eager ms | eager % of SOL |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        ref = ReferenceSession()
        ref.load_problem({"problem": path, "seed": 1, "shared_dir": shared, "threads": torch.get_num_threads()})
        cal = ref.guard.calibrate(ref, {"seed": 1, "problem": path})
        ref.make_trial({"trial": 0, "seed": 1})
        s = ref.guard.sol(ref, {"trial": 0, "peaks_cache": os.path.join(CACHE, "peaks")})
        inputs = ref.trials[0]["inputs_before"]
        ref._forward(inputs)
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            ref._forward(inputs)
            best = min(best, time.perf_counter() - t)
        eager_ms = best * 1e3
        print(f"| {os.path.basename(path)} | {', '.join(cal['passing']) or '-'} | {cal['tightened']} | "
              f"{', '.join(cal.get('still_passing', [])) or '-'} | {cal['degenerate']} | {s['flops'] / 1e9:.3f} | "
              f"{s['bytes'] / 1e6:.2f} | {s['bound']} | {s['sol_ms']:.4f} | {eager_ms:.3f} | "
              f"{100 * s['sol_ms'] / eager_ms:.1f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:] or sorted(glob.glob(os.path.join(ROOT, "examples", "problems", "*.py"))))
