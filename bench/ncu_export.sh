#!/usr/bin/env bash
# Records Nsight Compute reports of bundled problems (the problem's Model and its cuda/triton candidate)
# at GPU sizes, and exports each as the CSV pages kforge's profile parser reads. Run on a GPU machine
# from the repository root; the CSV files become the parser's recorded test fixtures.
#   bash bench/ncu_export.sh OUTDIR [TARGET:PROBLEM ...]    (default: a memory-bound, a reduction, a
#                                                           compute-bound and a fused problem)
# Per entry: OUTDIR/<target>-<problem>[-reference].{ncu-rep,details.csv,raw.csv,log}
set -u
cd "$(dirname "$0")/.."
out=${1:?usage: bench/ncu_export.sh OUTDIR [TARGET:PROBLEM ...]}; shift
mkdir -p "$out"
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PYTHON" ] || PYTHON=$(command -v python3)
NCU=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)}
[ -n "$NCU" ] || { echo "ncu_export: no ncu found" >&2; exit 2; }
entries=("$@")
[ ${#entries[@]} -gt 0 ] || entries=(cuda:01_relu cuda:03_softmax cuda:05_matmul triton:07_layernorm)
sections=(SpeedOfLight MemoryWorkloadAnalysis ComputeWorkloadAnalysis Occupancy LaunchStats WarpStateStats
          SchedulerStats)
section_args=(); for s in "${sections[@]}"; do section_args+=(--section "$s"); done
"$NCU" --version > "$out/ncu-version.txt" 2>&1

for e in "${entries[@]}"; do
  t=${e%%:*} p=${e#*:}
  sets=(); while read -r s; do sets+=(--set "$s"); done < <("$PYTHON" bench/gpu_sizes.py "$p")
  for who in candidate reference; do
    name=$t-$p; extra=()
    [ "$who" = reference ] && { name=$p-reference; extra=(--reference); }
    [ -e "$out/$name.ncu-rep" ] && continue  # a problem's reference is the same for both targets
    timeout 300 "$NCU" --clock-control none --profile-from-start off "${section_args[@]}" -f -o "$out/$name" \
      "$PYTHON" bench/ncu_candidate.py run "examples/problems/$p.py" "examples/candidates/$t/$p.py" \
      --reps 2 "${sets[@]}" "${extra[@]}" > "$out/$name.log" 2>&1
    echo "$name: ncu exit $?"
    "$NCU" --import "$out/$name.ncu-rep" --csv --page details --print-units base --print-rule-details \
      > "$out/$name.details.csv" 2>> "$out/$name.log"
    "$NCU" --import "$out/$name.ncu-rep" --csv --page raw --print-units base > "$out/$name.raw.csv" 2>> "$out/$name.log"
    wc -l "$out/$name.details.csv" "$out/$name.raw.csv" | head -2
  done
done
