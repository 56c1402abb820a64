#!/usr/bin/env bash
# The forged-verdict attacks on the cuda target, in under 4 minutes on one GPU: inputs predicted from
# the seed (CUDA's Philox), a forged `time` reply on fd 3, times reported as strings, noise on the
# reply channel, a timer replaced in the worker's session (CUDA events), untimed work inflated, torch
# work on a thread started at import, switched-off dispatch modes; then an honest candidate on the
# same GPU. The attacks are files under tests/adversarial (forged_gpu/: the cuda versions of forged/,
# each with a CUDA kernel of its own, so that only the attack is wrong; the thread and dispatch-mode
# attacks are forged/'s own: they delegate softmax on purpose, the delegation the recorder cannot see).
# Prints `ok NAME` or `FAIL NAME (status, error kind)` per case and `attacks: N/M stopped as expected`.
#
#   bash bench/adversarial_gpu.sh           # from the repository root; KFORGE_BIN, PYTHON as in gpu_env.sh
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
. "$ROOT/bench/gpu_env.sh"
[ -n "$KFORGE" ] || { echo "FAIL no kforge binary (build/kforge or KFORGE_BIN)"; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export KFORGE_HOME=$ROOT KFORGE_STATE_DIR=$WORK/state KFORGE_CACHE_DIR=$WORK/cache
ADV=$ROOT/tests/adversarial

# ==== expectations: one attack a line ============================================================
# file (under tests/adversarial)   problem  status     error kind           reps
# The timing attacks run the default 30 repetitions (six blocks): the clock floor judges three at least.
# (tests/adversarial/test_forged_gpu.py checks that every file of forged_gpu/ has a line here.)
EXPECTATIONS='
forged_gpu/predicted_inputs.py        relu     incorrect  mismatch             10
forged_gpu/forged_time_reply.py       relu     rejected   protocol             10
forged_gpu/forged_string_times.py     relu     rejected   protocol             10
forged_gpu/timer_strings.py           relu     rejected   protocol             10
forged_gpu/noise_on_reply_channel.py  relu     rejected   protocol             10
forged_gpu/patched_session_timer.py   relu     rejected   timing_crosscheck    30
forged_gpu/inflated_untimed.py        relu     rejected   static.dynamic_code  30
forged/thread_at_import.py            softmax  rejected   concurrency          10
forged/disabled_modes.py              softmax  rejected   introspection        10
'
# ==== end of expectations =========================================================================

total=0; stopped=0
check() {  # check FILE PROBLEM STATUS KIND REPS
  local file=$1 prob=$2 want_status=$3 want_kind=$4 reps=$5
  local name; name=$(basename "$file" .py)
  total=$((total + 1))
  timeout 170 "$KFORGE" eval "$ADV/problems/$prob.py" "$ADV/$file" --json "$WORK/$name.json" \
    --target cuda --no-compile-baseline --reps "$reps" --warmup 1 --seed 7 > "$WORK/$name.log" 2>&1
  local got
  got=$("$PYTHON" -c 'import json,sys
try:
    r = json.load(open(sys.argv[1]))
    print(r["status"], (r.get("error") or {}).get("kind", "-"))
except Exception as e:
    print("none", type(e).__name__)' "$WORK/$name.json")
  if [ "$got" = "$want_status $want_kind" ]; then
    echo "ok $name ($got)"; stopped=$((stopped + 1))
  else
    echo "FAIL $name (got: $got; expected: $want_status $want_kind; log: $(tail -c 300 "$WORK/$name.log" | tr '\n' ' '))"
  fi
}
while read -r file prob status kind reps; do
  [ -n "$file" ] && check "$file" "$prob" "$status" "$kind" "$reps"
done <<< "$EXPECTATIONS"
echo "attacks: $stopped/$total stopped as expected"
# The honest control: the cuda target's own example on its own problem, on the same GPU.
timeout 170 "$KFORGE" eval "$ROOT/targets/cuda/example_reference.py" "$ROOT/targets/cuda/example_candidate.py" \
  --json "$WORK/honest.json" --target cuda --no-compile-baseline --reps 10 --warmup 1 > "$WORK/honest.log" 2>&1
honest=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$WORK/honest.json" 2>/dev/null)
[ "$honest" = correct ] && echo "ok honest cuda example (correct)" || echo "FAIL honest cuda example ($honest: $(tail -c 300 "$WORK/honest.log" | tr '\n' ' '))"
[ "$stopped" = "$total" ] && [ "$honest" = correct ]
