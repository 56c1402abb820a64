#!/usr/bin/env bash
# KernelBench's own problems at their own sizes, on a GPU machine: honest candidates
# (bench/realsize/candidates) judged by kforge, by one process with nothing in between (the floor)
# and by KernelBench's own harness, side by side. Each step stays under 10 minutes.
#   bash bench/realsize.sh KERNELBENCH_DIR STEP [NAME_FILTER]   (substrings, comma-separated: 45_,47_)
# STEP: build       builds every candidate's extension in parallel (torch's load_inline, MAX_JOBS=2
#                   each) and records each build's seconds and its ninja steps
#       floor       bench/realsize_floor.py per problem, FLOOR_RUNS times (default 3: its first trial moves
#                   its mean by a third between runs): per-trial floor, eager/candidate CUDA-event times
#                   (imports the candidates as built by `build`: run that first)
#       kernelbench bench/kernelbench_harness.py per problem: KernelBench's verdict and speedup
#       prebuild    kforge eval --compile-only of every candidate at once: fills kforge's build cache
#                   (the same key as a GPU evaluation), so the kforge steps measure evaluations
#       kforge      kforge eval per problem at its defaults (--json; the workers' memory log and timeline:
#                   bench/memlog.py), then 19_ReLU at batch 512 twice
#                   (the second with its build cached). EVAL_TIMEOUT (default 540 s) caps each
#       bench       one kforge bench of every problem at default concurrency (BENCH_JOBS: --jobs)
#       report      bench/realsize_report.py: the table, from the steps' JSON lines
# Results go to $RESULTS (default $OUT when set, else bench/results/realsize-<date>), one JSON line a run.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/gpu_env.sh"
kb=$(cd "${1:?usage: realsize.sh KERNELBENCH_DIR STEP [NAME_FILTER]}" && pwd)  # absolute: the bench step's suite names problems by it
step=${2:?usage: realsize.sh KERNELBENCH_DIR STEP [NAME_FILTER]}
filter=${3:-}
problems_dir=$kb/KernelBench
[ -d "$problems_dir/level1" ] || { echo "realsize.sh: no KernelBench problems under $problems_dir" >&2; exit 2; }
RESULTS=${RESULTS:-${OUT:-$ROOT/bench/results/realsize-$(date +%Y%m%d)}}
mkdir -p "$RESULTS"
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-/tmp/realsize-ext}
export KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-/tmp/realsize-kforge-cache}
candidates=$ROOT/bench/realsize/candidates

problems() {  # NAME_FILTER: substrings separated by commas, a problem matching any of them
  IFS=, read -ra wanted <<<"$filter"
  grep -v '^\s*#' "$ROOT/bench/realsize/problems.txt" | grep -v '^\s*$' | while read -r p; do
    [ ${#wanted[@]} -eq 0 ] && { echo "$p"; continue; }
    for w in "${wanted[@]}"; do [[ "$p" == *$w* ]] && { echo "$p"; break; }; done
  done
  return 0  # a last line matching no filter leaves the loop's status 1, which pipefail passes on to `problems | grep`
}

case "$step" in
  build)
    for p in $(problems); do
      name=$(basename "$p")
      ( start=$(date +%s%N)
        MAX_JOBS=2 "$PYTHON" -c "import importlib.util, sys; s = importlib.util.spec_from_file_location('c', sys.argv[1]); m = importlib.util.module_from_spec(s); s.loader.exec_module(m)" "$candidates/$name" >"$RESULTS/build-$name.log" 2>&1
        rc=$?
        echo "{\"problem\": \"$p\", \"build_ms\": $(( ($(date +%s%N) - start) / 1000000 )), \"rc\": $rc}" >>"$RESULTS/build.jsonl" ) &
    done
    wait
    # Per-step seconds of every build (ninja's log: start ms, end ms, mtime, output).
    for log in "$TORCH_EXTENSIONS_DIR"/*/.ninja_log; do
      [ -f "$log" ] && awk -v ext="$(basename "$(dirname "$log")")" 'NR > 1 {printf "%s %s %.1f s\n", ext, $4, ($2 - $1) / 1000}' "$log"
    done | tee "$RESULTS/build-steps.txt"
    ;;
  prebuild)
    [ -n "$KFORGE" ] || { echo "realsize.sh: no kforge binary (build it or carry dist/)" >&2; exit 2; }
    for p in $(problems); do
      name=$(basename "$p" .py)
      ( start=$(date +%s%N)
        "$KFORGE" eval "$problems_dir/$p" "$candidates/$name.py" --target cuda --python "$PYTHON" --compile-only \
          --json "$RESULTS/prebuild-$name.json" >"$RESULTS/prebuild-$name.log" 2>&1
        rc=$?
        echo "{\"problem\": \"$p\", \"build_ms\": $(( ($(date +%s%N) - start) / 1000000 )), \"exit\": $rc}" >>"$RESULTS/prebuild.jsonl" ) &
    done
    wait
    ;;
  floor)
    for p in $(problems); do
      for _ in $(seq "${FLOOR_RUNS:-3}"); do
        "$PYTHON" "$ROOT/bench/realsize_floor.py" "$problems_dir/$p" "$candidates/$(basename "$p")" \
          2>>"$RESULTS/floor.log" | tail -1 >>"$RESULTS/floor.jsonl"
      done
    done
    ;;
  kernelbench)
    for p in $(problems); do
      "$PYTHON" "$ROOT/bench/kernelbench_harness.py" "$kb" "$problems_dir/$p" "$candidates/$(basename "$p")" \
        >"$RESULTS/kernelbench-$(basename "$p").log" 2>&1
      grep '^{' "$RESULTS/kernelbench-$(basename "$p").log" | tail -1 >>"$RESULTS/kernelbench.jsonl"
    done
    ;;
  kforge)
    [ -n "$KFORGE" ] || { echo "realsize.sh: no kforge binary (build it or carry dist/)" >&2; exit 2; }
    for p in $(problems); do
      name=$(basename "$p" .py)
      start=$(date +%s%N)
      KFORGE_MEMORY_LOG=1 timeout "${EVAL_TIMEOUT:-540}" "$KFORGE" eval "$problems_dir/$p" "$candidates/$name.py" \
        --target cuda --python "$PYTHON" --json "$RESULTS/kforge-$name.json" >"$RESULTS/kforge-$name.log" 2>&1
      echo "{\"problem\": \"$p\", \"exit\": $?, \"command_ms\": $(( ($(date +%s%N) - start) / 1000000 ))}" >>"$RESULTS/kforge.jsonl"
      "$PYTHON" "$ROOT/bench/memlog.py" "$RESULTS/kforge-$name.json" >"$RESULTS/kforge-$name.memlog"
      "$PYTHON" "$ROOT/bench/memlog.py" "$RESULTS/kforge-$name.json" --timeline >"$RESULTS/kforge-$name.timeline"
    done
    if problems | grep -q 19_ReLU; then
      for run in first cached; do
        start=$(date +%s%N)
        timeout "${EVAL_TIMEOUT:-540}" "$KFORGE" eval "$problems_dir/level1/19_ReLU.py" "$candidates/19_ReLU.py" --target cuda --python "$PYTHON" \
          --set batch_size=512 --json "$RESULTS/kforge-relu512-$run.json" >"$RESULTS/kforge-relu512-$run.log" 2>&1
        echo "{\"problem\": \"level1/19_ReLU.py\", \"set\": \"batch_size=512\", \"run\": \"$run\", \"exit\": $?, \"command_ms\": $(( ($(date +%s%N) - start) / 1000000 ))}" >>"$RESULTS/kforge.jsonl"
      done
    fi
    ;;
  bench)
    [ -n "$KFORGE" ] || { echo "realsize.sh: no kforge binary" >&2; exit 2; }
    suite=$(mktemp -d)/realsize.txt
    problems | sed "s|^|$problems_dir/|" >"$suite"
    # shellcheck disable=SC2086
    "$KFORGE" bench "$suite" --target cuda --candidates "$candidates" --python "$PYTHON" \
      --out "$RESULTS/bench" ${BENCH_JOBS:+--jobs $BENCH_JOBS} >"$RESULTS/bench.log" 2>&1
    echo "bench exit $?" >>"$RESULTS/bench.log"
    ;;
  report)
    "$PYTHON" "$ROOT/bench/realsize_report.py" "$RESULTS"
    ;;
  *) echo "realsize.sh: unknown step $step" >&2; exit 2 ;;
esac
