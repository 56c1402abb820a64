"""The device transport's numbers from bench/device_transport_check.sh's results: per correctness
trial, kforge's cost with each transport against the one-process floor, and each evaluation's time.
    python bench/device_transport_report.py RESULTS_DIR   (writes RESULTS_DIR/summary.md and prints it)"""

import json
import sys
from pathlib import Path


def load(path: Path):
    return json.loads(path.read_text()) if path.exists() else None


def eval_row(results: Path, mode: str, run: str) -> str:
    data = load(results / f"kforge-relu512-{mode}-{run}.json")
    if data is None:
        return f"| {mode} | {run} | – | – | – | – | – |"
    result = data["evaluations"][0] if "evaluations" in data else data
    phases = result.get("phases_s") or {}
    trials = (result.get("correctness") or {}).get("trials") or 0
    per_trial = phases.get("correctness_trials", 0) / trials if trials else None
    floor = load(results / "floor-relu512.json")
    ratio = per_trial / floor["trial_mean_s"] if per_trial and floor else None
    total = sum(v for v in phases.values() if isinstance(v, (int, float)))
    cells = [mode, run, result.get("status", "?"), f"{total:.1f}", f"{trials}",
             "–" if per_trial is None else f"{per_trial * 1e3:.0f}", "–" if ratio is None else f"{ratio:.2f}x"]
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    results = Path(sys.argv[1])
    floor = load(results / "floor-relu512.json")
    lines = ["# Device transport: KernelBench level1 19_ReLU at batch 512", ""]
    if floor:
        trials = ", ".join(f"{s * 1e3:.0f}" for s in floor["trial_s"])
        lines += [f"Device: {floor['device']}. Floor (one process: draw on the GPU, reference, candidate, compare): "
                  f"{floor['trial_mean_s'] * 1e3:.0f} ms per trial (trials: {trials} ms); inputs "
                  f"{floor['input_bytes'] / 1e6:.0f} MB.", ""]
    lines += ["| transport | build | status | phases (s) | trials | per trial (ms) | vs floor |",
              "|---|---|---|---|---|---|---|"]
    lines += [eval_row(results, mode, run) for mode in ("vmm", "host") for run in ("cold", "cached")]
    lines += ["", "Per trial: phases_s.correctness_trials / trials of the EvalResult (pipelined, so a trial's "
              "reference and candidate work overlap); the issue's bound is 2x the floor and a cached-build "
              "evaluation of at most 10 s."]
    text = "\n".join(lines) + "\n"
    (results / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
