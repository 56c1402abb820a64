#!/usr/bin/env bash
# Per-trial cost of this tree and an earlier kforge side by side, on the GPU machine, in one call:
# the candidates are built (load_inline, for the floor) while kforge's build cache is filled, the
# one-process floor is measured, then every problem is evaluated by this tree's kforge and by BEFORE
# in turn (realsize.sh's kforge step, at kforge eval's defaults).
#   bash bench/trial_ab.sh KERNELBENCH_DIR BEFORE_KFORGE OUT [NAME_FILTER]
# BEFORE_KFORGE: an earlier bundle's bin/kforge (its worker next to it). OUT/after and OUT/before get
# the evaluations, each with the floor's lines, and their summary.md (bench/realsize_report.py).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/gpu_env.sh"
kb=${1:?usage: trial_ab.sh KERNELBENCH_DIR BEFORE_KFORGE OUT [NAME_FILTER]}
before=$(cd "$(dirname "${2:?no BEFORE_KFORGE}")" && pwd)/$(basename "$2")
out=${3:?no OUT}
filter=${4:-}
mkdir -p "$out/after" "$out/before"
export KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-/tmp/trial-ab-cache} TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-/tmp/trial-ab-ext}
RESULTS=$out bash "$ROOT/bench/realsize.sh" "$kb" build "$filter" &
RESULTS=$out bash "$ROOT/bench/realsize.sh" "$kb" prebuild "$filter" &
wait
RESULTS=$out bash "$ROOT/bench/realsize.sh" "$kb" floor "$filter"
for side in after before; do
  cp "$out/floor.jsonl" "$out/build.jsonl" "$out/$side/" 2>/dev/null
  [ "$side" = before ] && export KFORGE_BIN=$before
  RESULTS=$out/$side bash "$ROOT/bench/realsize.sh" "$kb" kforge "$filter"
  "$PYTHON" "$ROOT/bench/realsize_report.py" "$out/$side" >/dev/null
done
