"""`kforge profile` on a real GPU with Nsight Compute. Skipped, with the reason, where there is no
CUDA GPU (every CI machine); bench/profile_gpu.sh runs the full set on one."""

import json
import subprocess
import sys

import pytest

from e2e_support import ROOT

PROBLEMS = ROOT / "examples" / "problems"
CUDA = ROOT / "examples" / "candidates" / "cuda"


def _gpu_reason():
    r = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                       capture_output=True, text=True, timeout=120)
    if r.stdout.strip() != "True":
        return f"no CUDA GPU: torch.cuda.is_available() is {r.stdout.strip() or r.stderr.strip()[-200:]} under {sys.executable}"
    return None


REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def test_elementwise_kernel_runs_near_the_measured_bandwidth(kforge):
    out = kforge.tmp / "relu.json"
    proc = kforge.run("profile", PROBLEMS / "01_relu.py", CUDA / "01_relu.py", "--target", "cuda", "--python",
                      sys.executable, "--set", "batch_size=4096", "--set", "dim=8192", "--json", out, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    if doc["ncu"]["status"] != "ok":
        pytest.skip(f"no Nsight Compute profile here: {doc['ncu'].get('note')}")
    for side in ("candidate", "reference"):
        kernels = doc["sides"][side]["ncu"]["kernels"]
        assert kernels and kernels[0]["duration_us_per_call"] > 50
        k = kernels[0]
        for key in ("dram_pct", "l2_pct", "l1_pct", "sm_pct", "achieved_occupancy_pct"):
            assert 0 <= k[key] <= 100, (side, key, k[key])
        assert k["dram_pct"] > 60, k  # 256 MB streamed: DRAM is the busiest unit
        assert doc["sides"][side]["analysis"]["bound"] == "memory"
        # Bytes over ncu's kernel time against kforge's measured copy bandwidth: same ballpark.
        bw = doc["sol"]["bytes"] / (k["duration_us_per_call"] / 1e6)
        assert 0.5 < bw / doc["sol"]["bandwidth_bytes_per_s"] < 1.3
    assert "DRAM bandwidth at" in proc.stdout


def test_missing_ncu_is_a_note_and_the_profile_stands(kforge):
    proc = kforge.run("profile", PROBLEMS / "01_relu.py", CUDA / "01_relu.py", "--target", "cuda", "--python",
                      sys.executable, "--ncu", "off", "--json", kforge.tmp / "p.json", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((kforge.tmp / "p.json").read_text())
    assert doc["ncu"] == {"status": "unavailable", "note": "Nsight Compute not run (--ncu off)"}
    assert doc["sides"]["candidate"]["torch_profiler"]["kernels_per_call"] >= 1
    assert "Note: Nsight Compute not run (--ncu off)" in proc.stdout
