#!/usr/bin/env bash
# `kforge profile` on a GPU machine: bundled problems at GPU sizes (bench/gpu_sizes.toml), each
# candidate against its PyTorch reference, with Nsight Compute. Writes, under $OUT when set (else
# bench/results/profile-<date>/):
#   summary.md      per problem and side: kforge's time, % of speed of light, ncu's duration and
#                   DRAM/L2/L1/SM throughput as % of peak, occupancy, the bound and the limiters;
#                   the peaks kforge measured next to the device's datasheet figures
#   json/           each profile document;  charts/  each roofline SVG
#   ncu-csv/        each Nsight Compute report exported as CSV (details and raw pages), for the
#                   parser's tests (src/profile/testdata)
#   logs.tar.gz     kforge's output, the workers' logs and tests/e2e/test_profile_gpu.py's result
#
#   bash bench/profile_gpu.sh                      # from the repository root
# Environment: KFORGE_BIN (default dist/bin/kforge, then build/kforge), PYTHON (default
# /opt/torch/.venv/bin/python3, then python3), PROFILE_RUNS ("target:problem ..." to profile;
# default: six cuda candidates, memory- and compute-bound), PROFILE_BUDGET_S (default 540: later
# runs are skipped past it).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
START=$(date +%s)
BUDGET=${PROFILE_BUDGET_S:-540}
RUN=${OUT:-$ROOT/bench/results/profile-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RUN/json" "$RUN/charts" "$RUN/ncu-csv" "$RUN/logs"

. "$ROOT/bench/gpu_env.sh"
export KFORGE_HOME=$ROOT KFORGE_STATE_DIR=$RUN/state KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-$RUN/cache} PYTHONUNBUFFERED=1
RUNS=${PROFILE_RUNS:-"cuda:01_relu cuda:03_softmax cuda:14_mean_std_tuple cuda:07_layernorm cuda:05_matmul cuda:08_linear_bias_relu"}

log() { printf '[profile_gpu %4ds] %s\n' $(( $(date +%s) - START )) "$*"; }

if [ -z "$KFORGE" ]; then
  log "no kforge binary: build one (scripts/setup.sh) or carry a bundle (scripts/bundle.sh -> dist/)"
  exit 2
fi
NCU=$(command -v ncu || true)
log "kforge $KFORGE, python $PYTHON, ncu ${NCU:-not found}, results in $RUN"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv; ${NCU:-false} --version; } \
  > "$RUN/logs/env.txt" 2>&1

for tp in $RUNS; do
  t=${tp%%:*} p=${tp#*:}
  if [ $(( $(date +%s) - START )) -gt "$BUDGET" ]; then
    log "$tp: skipped (past the ${BUDGET} s budget)"
    continue
  fi
  sets=$("$PYTHON" bench/gpu_sizes.py "$p" | sed 's/^/--set /')
  log "$tp: profiling ($sets)"
  # shellcheck disable=SC2086
  timeout 400 "$KFORGE" profile "examples/problems/$p.py" "examples/candidates/$t/$p.py" --target "$t" \
    --python "$PYTHON" $sets --json "$RUN/json/$t-$p.json" --chart "$RUN/charts/$t-$p.svg" \
    > "$RUN/logs/$t-$p.txt" 2>&1
  log "$tp: exit $?"
  # The Nsight Compute reports, as CSV, for the parser's tests.
  for side in candidate reference; do
    rep=$("$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["sides"][sys.argv[2]].get("ncu",{}).get("report",""))' \
          "$RUN/json/$t-$p.json" "$side" 2>/dev/null)
    if [ -n "$rep" ] && [ -f "$rep" ] && [ -n "$NCU" ]; then
      "$NCU" --import "$rep" --csv --page details --print-units base --print-rule-details > "$RUN/ncu-csv/$t-$p-$side-details.csv" 2>&1
      "$NCU" --import "$rep" --csv --page raw --print-units base > "$RUN/ncu-csv/$t-$p-$side-raw.csv" 2>&1
    fi
  done
done

if [ $(( $(date +%s) - START )) -lt $(( BUDGET - 90 )) ]; then
  log "tests: tests/e2e/test_profile_gpu.py"
  KFORGE_BIN=$KFORGE "$PYTHON" -m pytest -q -rs -p no:cacheprovider tests/e2e/test_profile_gpu.py > "$RUN/logs/tests.txt" 2>&1
  log "tests: exit $? ($(tail -1 "$RUN/logs/tests.txt"))"
else
  log "tests: skipped (past the budget)"
fi

"$PYTHON" bench/profile_report.py "$RUN" "$KFORGE_CACHE_DIR/peaks" > "$RUN/summary.md" 2> "$RUN/logs/report.log"
tar -czf "$RUN/logs.tar.gz" --exclude="*.ncu-rep" -C "$RUN" logs state/logs 2>/dev/null
rm -rf "$RUN/state" "$RUN/cache"
cat "$RUN/summary.md"
log "done in $(( $(date +%s) - START )) s; results in $RUN"
