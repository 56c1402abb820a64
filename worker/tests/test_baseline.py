"""`python -m kforge_worker baseline`: the device, the baselines' times and the bound that kforge run's
first prompt states, before any candidate exists."""

import json
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).resolve().parents[1]
PROBLEM = WORKER.parent / "examples" / "problems" / "08_linear_bias_relu.py"


def test_baseline_measures_the_reference_on_this_device(tmp_path):
    out = tmp_path / "b.json"
    subprocess.run([sys.executable, "-m", "kforge_worker", "baseline", str(PROBLEM), "--set", "batch_size=8",
                    "--threads", "1", "--reps", "5", "--no-compile", "--cache", str(tmp_path / "peaks"),
                    "--json", str(out)], check=True, cwd=WORKER, timeout=300)
    doc = json.loads(out.read_text())
    assert doc["device"]["kind"] == "cpu" and doc["device"]["name"] and doc["device"]["threads"] == 1
    eager = doc["eager"]
    assert eager["reps"] == 5 and 0 < eager["p25_ms"] <= eager["median_ms"] <= eager["p75_ms"]
    assert "compile" not in doc  # --no-compile
    # The library-call rule looks at the reference's main computation; the tolerance at its outputs.
    assert doc["main_computation"] == ["matmul", "relu"]  # canonical names (ops.py): nn.Linear is a matmul
    assert doc["tolerances"] == {"float32": 1e-4} and doc["audit"] == {"k": 16.0, "ulps": 8.0}
    sol = doc["sol"]
    assert sol["flops"] > 0 and sol["bound"] in ("compute", "memory") and sol["sol_ms"] > 0
    assert sol["peak_flops_per_s"] == doc["peaks"]["flops_per_s"]["float32"]  # the bound uses the stated peaks
