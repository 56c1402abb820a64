#!/usr/bin/env bash
# load_inline's cold build on the GPU machine, side by side in one run, then what a user meets in
# `kforge eval`: a KernelBench candidate's build with kforge's precompiled headers already made by
# an earlier candidate of the same flags, and the evaluation with its build cached.
#   bash bench/inline_build_gpu.sh KERNELBENCH_DIR [OUT]
# KERNELBENCH_DIR holds KernelBench/level1 (19_ReLU, 23_Softmax); OUT (default $OUT, else
# bench/results/inline-build-<date>) gets inline_build.txt and the evaluations' JSON.
# UNSPLIT=1 adds the build with nvcc's passes in turn.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/gpu_env.sh"
kb=${1:?usage: inline_build_gpu.sh KERNELBENCH_DIR [OUT]}/KernelBench
out=${2:-${OUT:-$ROOT/bench/results/inline-build-$(date +%Y%m%d)}}
mkdir -p "$out"
candidates=$ROOT/bench/realsize/candidates
{ nproc; lscpu | grep -E "Model name|MHz"; nvidia-smi --query-gpu=name --format=csv,noheader; } >"$out/machine.txt" 2>&1

# 1. Side by side: plain load_inline, kforge's builder without headers, making them, with them.
"$PYTHON" "$ROOT/bench/inline_build.py" "$candidates/19_ReLU.py" ${UNSPLIT:+--unsplit} --json "$out/inline_build.jsonl" \
  >"$out/inline_build.txt" 2>&1

# 2. kforge eval: 23_Softmax (same flags) builds first and makes the headers; 19_ReLU at batch 512
#    then builds cold with them, and is evaluated again with its build cached.
export KFORGE_CACHE_DIR=$(mktemp -d /tmp/inline-build-cache.XXXX)
[ -n "$KFORGE" ] || { echo "inline_build_gpu.sh: no kforge binary" >&2; exit 2; }
for run in softmax-makes-headers relu512-with-headers relu512-cached; do
  case $run in
    softmax-*) args=("$kb/level1/23_Softmax.py" "$candidates/23_Softmax.py" --compile-only) ;;
    *) args=("$kb/level1/19_ReLU.py" "$candidates/19_ReLU.py" --set batch_size=512) ;;
  esac
  start=$(date +%s%N)
  "$KFORGE" eval "${args[@]}" --target cuda --python "$PYTHON" --json "$out/eval-$run.json" >"$out/eval-$run.log" 2>&1
  echo "{\"run\": \"$run\", \"exit\": $?, \"command_ms\": $(( ($(date +%s%N) - start) / 1000000 ))}" >>"$out/eval.jsonl"
done
"$PYTHON" - "$out" <<'EOF' | tee "$out/eval-summary.txt"
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
for line in (out / "eval.jsonl").read_text().splitlines():
    run = json.loads(line)
    doc = json.loads((out / f"eval-{run['run']}.json").read_text())
    events = doc.get("build", {}).get("events", [])
    print(run["run"], run["exit"], f"{run['command_ms'] / 1000:.1f} s", doc.get("status"), doc.get("phases_s"),
          [{k: e.get(k) for k in ("cache_hit", "seconds", "precompiled_headers")} for e in events])
EOF
