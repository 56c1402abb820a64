#!/usr/bin/env bash
# GPU proof of the device transport (KFORGE_DEVICE_TRANSPORT=vmm: device-resident trials, tensors
# between the workers as CUDA VMM buffers), on one GPU machine, each step under 10 minutes:
#   unit         the worker tests of the device path, the GPU ones included (skipped on a CPU):
#                test_device_buffers, test_device_transport, test_trial_store, test_device_trials
#   vmm          bench/vmm_transport_check.py: the buffers across bubblewrap's PID namespace, and the
#                hostile replies (a FIFO, a size beyond the allocation, a shape that does not fit)
#   bundled      every cuda candidate of examples/ with the device transport, then with the host one
#                (statuses must agree)
#   adversarial  tests/adversarial/gpu (side streams, allocator reuse, patched events: the deferred-output
#                and snapshot checks on the device) and tests/e2e/test_gpu.py, with vmm
#   relu512      KernelBench level1 19_ReLU at batch 512 (805 MB in, 805 MB out): the one-process floor
#                (bench/realsize_floor.py), bench/trial_breakdown.py with each transport, and kforge
#                eval with each transport in $RELU512_MODES (default "vmm host"; cold, then cached build)
#                at eval's defaults
#   fullsize     kforge eval at eval's defaults of the problems in $FULLSIZE (default: the largest
#                level1 problems of bench/realsize) at their own sizes, the transport chosen as by
#                default, the GPU's used memory sampled every 200 ms (peak in fullsize.jsonl), each
#                worker command's memory (KFORGE_MEMORY_LOG) in fullsize-NAME.memlog
#   report       bench/device_transport_report.py: per-trial cost against the floor, eval seconds
#
#   bash bench/device_transport_check.sh KERNELBENCH_DIR [STEP...]   # default: every step in order
# Results: $RESULTS (default $OUT when set, else bench/results/device-transport-<date>).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/bench/gpu_env.sh"
kb=${1:?usage: device_transport_check.sh KERNELBENCH_DIR [STEP...]}
shift
steps=${*:-unit vmm bundled adversarial relu512 report}
RESULTS=${RESULTS:-${OUT:-$ROOT/bench/results/device-transport-$(date +%Y%m%d-%H%M%S)}}
mkdir -p "$RESULTS"
export KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-/tmp/device-transport-cache} PYTHONUNBUFFERED=1
relu=$kb/KernelBench/level1/19_ReLU.py
relu_candidate=$ROOT/bench/realsize/candidates/19_ReLU.py

run_step() {  # NAME: runs the function, output in $RESULTS/NAME.log, status line on stdout
  local t0=$SECONDS
  "$1" >"$RESULTS/$1.log" 2>&1
  local rc=$?
  echo "$1: exit $rc in $((SECONDS - t0)) s" | tee -a "$RESULTS/steps.txt"
}

unit() {
  KFORGE_DEVICE_TRANSPORT=vmm "$PYTHON" -m pytest -q -p no:cacheprovider -rs worker/tests/test_device_buffers.py \
    worker/tests/test_device_transport.py worker/tests/test_trial_store.py worker/tests/test_device_trials.py
}

vmm() {
  timeout 580 "$PYTHON" bench/vmm_transport_check.py --json "$RESULTS/vmm.json"
}

bundled() {
  [ -n "$KFORGE" ] || { echo "no kforge binary"; return 2; }
  for candidate in examples/candidates/cuda/*.py; do
    name=$(basename "$candidate" .py)
    sets=$("$PYTHON" bench/gpu_sizes.py "$name" | sed 's/^/--set /')
    for mode in vmm host; do
      # shellcheck disable=SC2086
      KFORGE_DEVICE_TRANSPORT=$mode timeout 300 "$KFORGE" eval "examples/problems/$name.py" "$candidate" \
        --target cuda --python "$PYTHON" --no-compile-baseline $sets --json "$RESULTS/bundled-$mode-$name.json" \
        >"$RESULTS/bundled-$mode-$name.txt" 2>&1
      echo "$name $mode exit $? $(grep -m1 '^status:' "$RESULTS/bundled-$mode-$name.txt")"
    done
  done
}

adversarial() {
  [ -n "$KFORGE" ] || { echo "no kforge binary"; return 2; }
  KFORGE_BIN=$KFORGE KFORGE_DEVICE_TRANSPORT=vmm timeout 580 "$PYTHON" -m pytest -q -p no:cacheprovider -rs \
    tests/adversarial/gpu tests/e2e/test_gpu.py -k "not failure and not hung"
}

relu512() {
  [ -f "$relu" ] || { echo "no $relu"; return 2; }
  "$PYTHON" bench/realsize_floor.py "$relu" "$relu_candidate" --set batch_size=512 --json "$RESULTS/floor-relu512.json"
  for mode in host vmm; do
    KFORGE_DEVICE_TRANSPORT=$mode "$PYTHON" bench/trial_breakdown.py "$relu" "$relu_candidate" --device cuda \
      --set batch_size=512 --trials 5 >"$RESULTS/breakdown-$mode.txt" 2>&1
    head -5 "$RESULTS/breakdown-$mode.txt"
  done
  [ -n "$KFORGE" ] || { echo "no kforge binary"; return 2; }
  for mode in ${RELU512_MODES:-vmm host}; do
    for run in cold cached; do
      start=$(date +%s%N)
      KFORGE_DEVICE_TRANSPORT=$mode timeout 400 "$KFORGE" eval "$relu" "$relu_candidate" --target cuda \
        --python "$PYTHON" --set batch_size=512 --json "$RESULTS/kforge-relu512-$mode-$run.json" \
        >"$RESULTS/kforge-relu512-$mode-$run.txt" 2>&1
      echo "relu512 $mode $run exit $? in $(( ($(date +%s%N) - start) / 1000000 )) ms"
    done
  done
}

fullsize() {
  [ -n "$KFORGE" ] || { echo "no kforge binary"; return 2; }
  for name in ${FULLSIZE:-19_ReLU 23_Softmax 36_RMSNorm_ 47_Sum_reduction_over_a_dimension 96_HuberLoss}; do
    problem=$(ls "$kb"/KernelBench/level*/"$name.py" | head -1)
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$RESULTS/fullsize-$name.mem" &
    local poll=$!
    start=$(date +%s%N)
    KFORGE_MEMORY_LOG=1 timeout "${FULLSIZE_TIMEOUT:-500}" "$KFORGE" eval "$problem" "bench/realsize/candidates/$name.py" --target cuda \
      --python "$PYTHON" --json "$RESULTS/fullsize-$name.json" >"$RESULTS/fullsize-$name.txt" 2>&1
    local rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
    kill $poll
    "$PYTHON" bench/memlog.py "$RESULTS/fullsize-$name.json" >"$RESULTS/fullsize-$name.memlog"
    "$PYTHON" - "$RESULTS/fullsize-$name.json" "$RESULTS/fullsize-$name.mem" "$name" "$rc" "$ms" <<'PY' | tee -a "$RESULTS/fullsize.jsonl"
import json, os, sys
path, mem, name, rc, ms = sys.argv[1:]
doc = json.load(open(path)) if os.path.exists(path) else {}
used = [int(x) for x in open(mem).read().split() if x.strip().isdigit()]
timing = doc.get("timing") or {}
print(json.dumps({"problem": name, "exit": int(rc), "command_ms": int(ms), "status": doc.get("status"),
                  "error": (doc.get("error") or {}).get("message", "")[:300], "speedup_vs_eager": doc.get("speedup_vs_eager"),
                  "transport": (doc.get("env") or {}).get("device_transport"), "lean": timing.get("lean", False),
                  "phases_s": doc.get("phases_s"), "peak_gpu_mib": max(used) if used else None}))
PY
  done
}

report() {
  "$PYTHON" bench/device_transport_report.py "$RESULTS"
}

for s in $steps; do
  case "$s" in
    unit|vmm|bundled|adversarial|relu512|fullsize|report) run_step "$s" ;;
    *) echo "device_transport_check.sh: unknown step $s" >&2; exit 2 ;;
  esac
done
cat "$RESULTS/steps.txt"
[ -f "$RESULTS/summary.md" ] && cat "$RESULTS/summary.md"
