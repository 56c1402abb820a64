#!/usr/bin/env bash
# The forged-verdict attacks (tests/adversarial/forged/) on the cuda target, in under 4 minutes on one
# GPU: inputs predicted from the seed (CUDA's Philox), a forged `time` reply on fd 3, times reported
# as strings, noise on the reply channel, a timer replaced in the worker's session (CUDA events),
# torch work on a thread started at import, switched-off dispatch modes; then an honest candidate
# on the same GPU. Each attack's kernel is torch code that is not the reference's operator (so the
# delegation checks do not decide) and the honest one is the cuda target's example ReLU.
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
PROBLEM=$ROOT/tests/adversarial/problems/relu.py
QUICK=(--target cuda --no-compile-baseline --reps 10 --warmup 1 --seed 7)

# The slow "kernel" of the timing attacks and the plain one of the protocol attacks: ReLU as
# torch.where, 400 times or once, written into each file (the sandbox sees the candidate's file only).
sed_kernel() {  # the CPU attack with its native kernel replaced by relu_where
  "$PYTHON" - "$1" "$2" "$3" <<'PY'
import re, sys
src, dst, times = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
src = re.sub(r'from kforge_worker import native\n', """

def relu_where(x, times=1):
    out = x
    for _ in range(times):
        out = torch.where(x > 0, x, torch.zeros((), device=x.device, dtype=x.dtype))
    return out
""", src)
src = re.sub(r'SRC = r""".*?"""\n', '', src, flags=re.S)
src = re.sub(r'_lib = native.load\(.*?\n', '', src)
src = re.sub(r'        out = torch.empty_like\(x\)\n(        for _ in range\(200\):\n    )?        _lib.relu\(native.ptr\(x\), native.ptr\(out\), x.numel\(\)\)\n        return out\n',
             '        return relu_where(x, ' + times + ')\n', src)
open(dst, "w").write(src)
PY
}
F=$ROOT/tests/adversarial/forged
sed_kernel "$F/forged_time_reply.py" "$WORK/forged_time_reply.py" 400
sed_kernel "$F/forged_string_times.py" "$WORK/forged_string_times.py" 1
sed_kernel "$F/timer_strings.py" "$WORK/timer_strings.py" 1
sed_kernel "$F/noise_on_reply_channel.py" "$WORK/noise_on_reply_channel.py" 1
sed_kernel "$F/patched_session_timer.py" "$WORK/patched_session_timer.py" 400
sed_kernel "$F/inflated_untimed.py" "$WORK/inflated_untimed.py" 400
# Inputs predicted on the GPU's generator (Philox), as the reference draws them.
sed -e 's/x = torch.randn(ROWS, COLS)/x = torch.randn(ROWS, COLS, device="cuda")/' "$F/predicted_inputs.py" > "$WORK/predicted_inputs.py"
# The thread and dispatch-mode attacks delegate softmax: judged on the softmax problem.
cp "$F/thread_at_import.py" "$F/disabled_modes.py" "$WORK/"

total=0; stopped=0
check() {  # check NAME PROBLEM STATUS KIND [extra flags]
  local name=$1 prob=$2 want_status=$3 want_kind=$4; shift 4
  total=$((total + 1))
  timeout 170 "$KFORGE" eval "$prob" "$WORK/$name.py" --json "$WORK/$name.json" "${QUICK[@]}" "$@" > "$WORK/$name.log" 2>&1
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
SOFTMAX=$ROOT/tests/adversarial/problems/softmax.py
check predicted_inputs "$PROBLEM" incorrect mismatch
check forged_time_reply "$PROBLEM" rejected protocol
check forged_string_times "$PROBLEM" rejected protocol
check timer_strings "$PROBLEM" rejected protocol
check noise_on_reply_channel "$PROBLEM" rejected protocol
check patched_session_timer "$PROBLEM" rejected timing_crosscheck
check inflated_untimed "$PROBLEM" rejected static.dynamic_code  # its computed names fail first (as on the CPU)
check thread_at_import "$SOFTMAX" rejected concurrency
check disabled_modes "$SOFTMAX" rejected introspection
echo "attacks: $stopped/$total stopped as expected"
# The honest control: the cuda target's own example on its own problem, on the same GPU.
timeout 170 "$KFORGE" eval "$ROOT/targets/cuda/example_reference.py" "$ROOT/targets/cuda/example_candidate.py" \
  --json "$WORK/honest.json" --target cuda --no-compile-baseline --reps 10 --warmup 1 > "$WORK/honest.log" 2>&1
honest=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$WORK/honest.json" 2>/dev/null)
[ "$honest" = correct ] && echo "ok honest cuda example (correct)" || echo "FAIL honest cuda example ($honest: $(tail -c 300 "$WORK/honest.log" | tr '\n' ' '))"
[ "$stopped" = "$total" ] && [ "$honest" = correct ]
