#!/usr/bin/env bash
# Where one `kforge eval` spends its time inside the workers: py-spy samples every kforge process
# (reference, sandboxed candidate, builder) and bench/worker_profile.py sums them per worker; with
# FORMAT=speedscope, bench/trial_profile.py puts each trial command's first run beside its third.
#   bash bench/worker_profile.sh PROBLEM CANDIDATE [kforge eval flags...]
# Environment: PYSPY (default: py-spy on PATH; `pip install py-spy`), PYTHON and KFORGE_BIN as in
# bench/gpu_env.sh, RESULTS (default $OUT, else bench/results/worker-profile-<date>).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/gpu_env.sh"
problem=${1:?usage: worker_profile.sh PROBLEM CANDIDATE [kforge eval flags...]}
candidate=${2:?usage: worker_profile.sh PROBLEM CANDIDATE [kforge eval flags...]}
shift 2
PYSPY=${PYSPY:-$(command -v py-spy)}
[ -x "$PYSPY" ] || { echo "worker_profile.sh: py-spy not found (pip install py-spy, or set PYSPY)" >&2; exit 2; }
[ -n "$KFORGE" ] || { echo "worker_profile.sh: no kforge binary" >&2; exit 2; }
RESULTS=${RESULTS:-${OUT:-$ROOT/bench/results/worker-profile-$(date +%Y%m%d-%H%M%S)}}
mkdir -p "$RESULTS"
name=$(basename "$candidate" .py)
if [ "${FORMAT:-raw}" = speedscope ]; then  # ordered samples: one command's first run beside a later one
  "$PYSPY" record --subprocesses --nonblocking --idle --format speedscope -r 1000 -o "$RESULTS/$name.speedscope.json" -- \
    "$KFORGE" eval "$problem" "$candidate" --python "$PYTHON" --json "$RESULTS/$name.json" "$@" \
    >"$RESULTS/$name.txt" 2>&1
  echo "kforge eval exit $?; $(grep -m1 '^status:' "$RESULTS/$name.txt"); $(grep -m1 '^evaluated in' "$RESULTS/$name.txt")"
  for command in make_trial run check; do
    "$PYTHON" "$ROOT/bench/trial_profile.py" "$RESULTS/$name.speedscope.json" --command "$command" --occurrences 0,2
  done | tee "$RESULTS/$name.trials.txt"
  exit 0
fi
"$PYSPY" record --subprocesses --nonblocking --format raw -r 100 -o "$RESULTS/$name.samples" -- \
  "$KFORGE" eval "$problem" "$candidate" --python "$PYTHON" --json "$RESULTS/$name.json" "$@" \
  >"$RESULTS/$name.txt" 2>&1
echo "kforge eval exit $?; $(grep -m1 '^status:' "$RESULTS/$name.txt"); $(grep -m1 '^evaluated in' "$RESULTS/$name.txt")"
"$PYTHON" "$ROOT/bench/worker_profile.py" "$RESULTS/$name.samples" --top 45 --json "$RESULTS/$name.profile.json" \
  | tee "$RESULTS/$name.profile.txt"
