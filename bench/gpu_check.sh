#!/usr/bin/env bash
# GPU acceptance run of the cuda and triton targets, on one GPU machine, in under 9 minutes:
#   sweep       every problem of bench/gpu_sizes.toml with its cuda and triton candidate (status,
#               candidate/eager/torch.compile medians, speedups)
#   failures    each candidate of tests/gpu_failures/, then a correct candidate on the same GPU
#   fidelity    kforge's candidate median against Nsight Compute's gpu__time_duration.sum
#   turnaround  fresh-cache and cached evaluations (no torch.compile baseline) of fast-path,
#               load_inline and Triton candidates
#   lock        an evaluation waits while another process holds the GPU's timing lock
#   tests       pytest tests/e2e/test_gpu.py worker/tests/test_cuda.py
# Each step logs to logs/<step>.log and goes on after a failure; the summary table comes last.
# Results: $OUT (summary.md, results.json, logs.tar.gz) when set, and bench/results/<date>/.
#
#   bash bench/gpu_check.sh                        # from the repository root
# Environment: KFORGE_BIN (default dist/bin/kforge, then build/kforge), PYTHON (default
# /opt/torch/.venv/bin/python3, then python3), GPU_CHECK_BUDGET_S (default 520: later steps are
# skipped past it), GPU_CHECK_JOBS (parallel sweep evaluations, default 4), GPU_CHECK_STEPS (the
# steps to run, default "env sweep failures fidelity turnaround lock tests"), KFORGE_CUDA_ARCH.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
START=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET_S:-520}
RUN=${GPU_CHECK_DIR:-$ROOT/bench/results/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RUN/json" "$RUN/logs"
STEPS=$RUN/steps.tsv
: > "$STEPS"

. "$ROOT/bench/gpu_env.sh"
# This checkout's worker/, targets/ and examples/ (a bundle's own copies may be older); state and
# caches private to this run, so "cold" means cold.
export KFORGE_HOME=$ROOT KFORGE_STATE_DIR=$RUN/state KFORGE_CACHE_DIR=$RUN/cache KFORGE_BIN=$KFORGE PYTHON
export PYTHONUNBUFFERED=1

log() { printf '[gpu_check %4ds] %s\n' $(( $(date +%s) - START )) "$*"; }
left() { echo $(( BUDGET - ($(date +%s) - START) )); }

# step NAME NEEDED_S COMMAND...: runs COMMAND with output in logs/NAME.log unless fewer than
# NEEDED_S seconds of the budget are left; records NAME, status and seconds.
step() {
  local name=$1 need=$2; shift 2
  case " ${GPU_CHECK_STEPS:-env sweep failures fidelity turnaround lock tests} " in
    *" $name "*) ;;
    *) return ;;
  esac
  if [ "$(left)" -lt "$need" ]; then
    log "$name: skipped ($(left) s of the budget left, needs ~$need s)"
    printf '%s\tskipped\t0\n' "$name" >> "$STEPS"
    return
  fi
  log "$name: start"
  local t0=$(date +%s) rc
  "$@" > "$RUN/logs/$name.log" 2>&1
  rc=$?
  local status=ok; [ $rc -eq 0 ] || status="failed (exit $rc)"
  printf '%s\t%s\t%d\n' "$name" "$status" $(( $(date +%s) - t0 )) >> "$STEPS"
  log "$name: $status in $(( $(date +%s) - t0 )) s"
}

sets() { "$PYTHON" bench/gpu_sizes.py "$1" | sed 's/^/--set /'; }

# eval_one JSON_NAME PROBLEM CANDIDATE TARGET [kforge eval options...]
eval_one() {
  local name=$1 problem=$2 candidate=$3 target=$4; shift 4
  timeout 400 "$KFORGE" eval "$problem" "$candidate" --target "$target" --python "$PYTHON" \
    --json "$RUN/json/$name.json" "$@" > "$RUN/logs/eval-$name.txt" 2>&1
  local rc=$?
  printf '%-44s exit %d  %s\n' "$name" $rc "$(grep -m1 '^status:' "$RUN/logs/eval-$name.txt")"
  return 0
}
export -f eval_one sets
export RUN KFORGE

env_info() {
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
  "$PYTHON" -c 'import sys, torch, triton; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__); print(torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0))'
  nvcc --version; ncu --version; command -v bwrap || echo "no bubblewrap: candidates run with process-group isolation"
  "$KFORGE" --version; ldd "$KFORGE" | grep -v -E 'linux-vdso|ld-linux' | head -40
  "$KFORGE" targets
}

sweep() {
  # One job per problem: its cuda candidate, then its triton one (which finds torch.compile's
  # baseline of the problem cached). Timing is serialised by kforge's GPU lock; builds and
  # correctness trials of the other jobs go on meanwhile.
  "$PYTHON" bench/gpu_sizes.py --list | xargs -P "${GPU_CHECK_JOBS:-4}" -I{} bash -c '
    p={}; s=$(sets $p)
    for t in cuda triton; do eval_one sweep-$t-$p examples/problems/$p.py examples/candidates/$t/$p.py $t $s; done'
}

failures() {
  # One failure/recovery pair at a time: a fault stays inside its own process's context, but a hung
  # kernel of one pair holds the GPU and would stall another pair's timing.
  printf '%s\n' illegal_address kernel_trap launch_failure device_oom hang | xargs -P 1 -I{} bash -c '
    eval_one fail-{} examples/problems/01_relu.py tests/gpu_failures/{}.py cuda --timeout 10 --no-compile-baseline
    eval_one after-{} examples/problems/01_relu.py examples/candidates/cuda/01_relu.py cuda --no-compile-baseline \
      --trials 2 --reps 10'
}

fidelity() {
  # Nsight Compute on the candidates of single-kernel problems, at the sweep's sizes; the report
  # sets each against the candidate median kforge reported in the sweep.
  for tp in cuda:01_relu cuda:03_softmax cuda:05_matmul cuda:07_layernorm triton:03_softmax triton:07_layernorm; do
    local t=${tp%%:*} p=${tp#*:}
    local s; s=$(sets "$p")
    # shellcheck disable=SC2086
    KFORGE_BUILD_CACHE=$RUN/cache/build TRITON_CACHE_DIR=$RUN/cache/triton \
      timeout 300 "$PYTHON" bench/ncu_candidate.py measure examples/problems/$p.py examples/candidates/$t/$p.py \
      --reps 20 $s > "$RUN/json/ncu-$t-$p.json" 2> "$RUN/logs/ncu-$t-$p.txt"
    echo "$tp ncu: $(cat "$RUN/json/ncu-$t-$p.json" | head -c 300)"
  done
}

turnaround() {
  # Cold: a fresh cache folder (no cubin, no extension, no Triton kernel). Cached: the same again.
  # The problems' own (CI) sizes: what is measured is the harness, not the kernels.
  for tp in cuda:01_relu cuda:14_mean_std_tuple; do
    local t=${tp%%:*} p=${tp#*:}
    for run in cold cached1; do
      KFORGE_CACHE_DIR=$RUN/turnaround-cache-$t-$p \
        eval_one turn-$t-$p-$run examples/problems/$p.py examples/candidates/$t/$p.py "$t" --no-compile-baseline
    done
  done
  for run in cold cached1; do
    KFORGE_CACHE_DIR=$RUN/turnaround-cache-load_inline \
      eval_one turn-load_inline-$run targets/cuda/example_reference.py targets/cuda/example_candidate_load_inline.py cuda \
      --no-compile-baseline
  done
}

lock() {
  # Hold the GPU's timing lock from outside for 30 s (longer than the evaluation takes to reach its
  # timing); the evaluation must wait for it before timing.
  mkdir -p "$KFORGE_STATE_DIR/locks"
  local idx=${CUDA_VISIBLE_DEVICES:-0}; idx=${idx%%,*}
  flock "$KFORGE_STATE_DIR/locks/cuda-$idx.lock" sleep 30 &
  local holder=$!
  sleep 0.5
  eval_one lock-wait examples/problems/01_relu.py examples/candidates/cuda/01_relu.py cuda --no-compile-baseline
  wait $holder
}

tests() {
  # The failure and hang tests repeat what the failures step has just shown.
  "$PYTHON" -m pytest -q -p no:cacheprovider tests/e2e/test_gpu.py worker/tests/test_cuda.py -rs \
    -k "not failure and not hung"
}

if [ -z "$KFORGE" ]; then
  log "no kforge binary: build one (scripts/setup.sh) or carry a bundle (scripts/bundle.sh -> dist/)"
  exit 2
fi
log "kforge $KFORGE, python $PYTHON, results in $RUN"
step env 10 env_info
step sweep 120 sweep
step failures 50 failures
step fidelity 30 fidelity
step turnaround 80 turnaround
step lock 35 lock
step tests 30 tests

"$PYTHON" bench/gpu_report.py "$RUN" > "$RUN/summary.md" 2> "$RUN/logs/report.log"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp "$RUN/summary.md" "$RUN/results.json" "$OUT/" 2>/dev/null
  # Step logs, result JSON and each evaluation's worker logs (kept small: no caches).
  tar -czf "$OUT/logs.tar.gz" -C "$RUN" logs json steps.tsv state/logs 2>/dev/null
fi
cat "$RUN/summary.md"
log "done in $(( $(date +%s) - START )) s; results in $RUN${OUT:+ and $OUT}"
