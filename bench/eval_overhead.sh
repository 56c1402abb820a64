#!/usr/bin/env bash
# Harness overhead of `kforge eval` on this machine:
#   1. per-evaluation overhead for a trivial candidate (process start, load, 5-trial check),
#      broken down by stage from the EvalResult's phases_s;
#   2. cold vs cached compile time of the cpu target's two compile paths: the fast path
#      (kforge_kernels.native, g++ -shared) and torch.utils.cpp_extension.load_inline.
# Cold = an empty compile cache; cached = the same candidate again in a new process.
# Usage: bash bench/eval_overhead.sh [RUNS]   (default 5). Needs scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
kforge=$PWD/build/kforge
py=$PWD/.venv/bin/python
work=$(mktemp -d /tmp/kforge-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
export KFORGE_STATE_DIR=$work/state

field() {  # field FILE EXPR: print a value from an EvalResult JSON
  "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$1" "$2"
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $("$py" -c 'import torch; print("torch", torch.__version__)')"
echo
echo "== 1. per-evaluation overhead, trivial candidate (tests/e2e: tiny_add + correct), $runs runs"
export KFORGE_CACHE_DIR=$work/cache-warm
printf '%-6s %10s %12s %12s %12s %12s\n' run wall_s start+load_s load_cand_s trials_s shutdown_s
for i in $(seq 1 "$runs"); do
  "$kforge" -q eval tests/e2e/problems/tiny_add.py tests/e2e/candidates/correct.py --no-timing --json "$work/t.json" >/dev/null
  printf '%-6s %10.2f %12.2f %12.3f %12.3f %12.3f\n' "$i" "$(field "$work/t.json" "d['wall_seconds']")" \
    "$(field "$work/t.json" "d['phases_s']['start_and_load_problem']")" "$(field "$work/t.json" "d['phases_s']['load_candidate']")" \
    "$(field "$work/t.json" "d['phases_s']['correctness_trials']")" "$(field "$work/t.json" "d['phases_s']['shutdown']")"
done

echo
echo "== 2. compile paths, cold vs cached (targets/cpu single-shot example)"
printf '%-12s %-7s %14s %14s %10s\n' path cache load_cand_s eval_wall_s cache_hit
for path in native load_inline; do
  cand=targets/cpu/example_candidate.py
  [ "$path" = load_inline ] && cand=targets/cpu/example_candidate_load_inline.py
  export KFORGE_CACHE_DIR=$work/cache-$path
  for state in cold cached; do
    "$kforge" -q eval targets/cpu/example_reference.py "$cand" --no-timing --timeout 600 --json "$work/c.json" >/dev/null
    hit=$(field "$work/c.json" "all(e.get('cache_hit') for e in d['build']['events']) if d['build']['events'] else 'n/a'")
    printf '%-12s %-7s %14.2f %14.2f %10s\n' "$path" "$state" "$(field "$work/c.json" "d['phases_s']['load_candidate']")" \
      "$(field "$work/c.json" "d['wall_seconds']")" "$hit"
  done
done
