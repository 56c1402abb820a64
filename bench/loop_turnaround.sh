#!/usr/bin/env bash
# Per-candidate turnaround inside `kforge run`, the way the refinement loop meets it: a stand-in
# model (bench/delayed_llm.py) answers every request after DELAY seconds with a new variant of a
# fast-path candidate, and each evaluation (build + 5 trials + timing, no torch.compile baseline) is
# timed by kforge itself (EvalResult.wall_seconds). The loop's worker pool keeps the reference process
# and starts each next candidate process while the model "thinks".
#   bash bench/loop_turnaround.sh [ROUNDS] [DELAY]      # defaults: 4 rounds, 4 s
# Target: cuda when torch sees a GPU, else cpu; TARGET=cpu|cuda chooses. Environment as
# bench/turnaround.sh (KFORGE_BIN, PYTHON).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-4}
delay=${2:-4}
case $rounds in '' | *[!0-9]* | 0) echo "usage: bash bench/loop_turnaround.sh [ROUNDS] [DELAY_S]" >&2; exit 2 ;; esac

. bench/turnaround_env.sh

work=$(mktemp -d /tmp/kforge-loop-turnaround-XXXXXX)
trap 'rm -rf "$work"' EXIT
export KFORGE_HOME=$PWD KFORGE_STATE_DIR=$work/state KFORGE_CACHE_DIR=$work/cache
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
  "$("$py" -c 'import torch; print("torch", torch.__version__, "|", torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")')"
echo "target: $target; $rounds rounds per problem; the model answers after $delay s"

for p in 01_relu 14_mean_std_tuple; do
  "$kforge" -q run "examples/problems/$p.py" --target "$target" --python "$py" \
    --llm "exec:$py $PWD/bench/delayed_llm.py $PWD/examples/candidates/$target/$p.py $delay" \
    --rounds "$rounds" --samples 1 --patience 0 --sol-stop 0 --no-profile --no-compile-baseline \
    --eval-trials 5 --eval-reps 30 --eval-warmup 3 --out "$work/out-$p" > "$work/run-$p.txt" 2>&1 \
    || { echo "kforge run failed for $p:"; tail -20 "$work/run-$p.txt"; }
  echo "  $p done"
done

"$py" - "$work/state/kforge.db" <<'PY'
import json, sqlite3, statistics, sys

con = sqlite3.connect(sys.argv[1])
rows = con.execute("SELECT r.run_id, r.step, e.result_json FROM run_evaluations r JOIN evaluations e "
                   "ON e.id = r.evaluation_id ORDER BY r.run_id, e.id").fetchall()
phases = ["start_and_load_problem", "screen_candidate", "load_candidate", "correctness_trials", "timing", "shutdown"]
short = ["start+load", "screen", "load_cand", "trials", "timing", "shutdown"]
print()
print("| problem | step | status | turnaround s | build s (hit) | reference | candidate process | "
      + " | ".join(f"{s} s" for s in short) + " |")
print("| --- | --- | --- | ---: | ---: | --- | --- | " + " | ".join("---:" for _ in short) + " |")
warm = []
for run_id, step, doc in rows:
    e = json.loads(doc)
    name = e["problem"].rsplit("/", 1)[1][:-3]
    w = e["env"]["workers"]
    events = e.get("build", {}).get("events", [])
    hit = "/".join("hit" if ev.get("cache_hit") else "miss" for ev in events) or "none"
    ph = e.get("phases_s", {})
    print(f"| {name} | {step} | {e['status']} | {e['wall_seconds']:.2f} | {e.get('build', {}).get('load_seconds', 0):.2f} "
          f"({hit}) | {w['reference']['origin']} | {w['candidate']['origin']} | "
          + " | ".join(f"{ph[p]:.3f}" if p in ph else "-" for p in phases) + " |")
    if w["candidate"]["origin"] == "started ahead" and w["reference"]["origin"].startswith("kept"):
        warm.append(e["wall_seconds"])
print()
if warm:
    print(f"- evaluations with a kept reference and a candidate process started ahead: median {statistics.median(warm):.2f} s, "
          f"max {max(warm):.2f} s over {len(warm)} (goal: cold <= 3.0 s, cached <= 1.5 s; every build here is new code)")
PY
