#!/usr/bin/env bash
# GPU failures inside one worker pool: each failure candidate of tests/gpu_failures/ is followed by a
# correct candidate in the same `kforge eval`, whose candidate process was started ahead while the
# failure ran (and the reference process is kept throughout). Each failure must get its own status
# and kind, and every correct candidate after it must come out correct.
#   bash bench/pool_failures.sh [OUT.json]      # on a GPU machine, from the repository root
# Environment: as bench/gpu_env.sh (KFORGE_BIN, PYTHON).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. bench/gpu_env.sh
[ -n "$KFORGE" ] || { echo "no kforge binary: run scripts/setup.sh (or carry a bundle in dist/)" >&2; exit 2; }
out=${1:-$(mktemp /tmp/kforge-pool-failures-XXXXXX.json)}
work=$(mktemp -d /tmp/kforge-pool-failures-XXXXXX)
trap 'rm -rf "$work"' EXIT
export KFORGE_HOME=$ROOT KFORGE_STATE_DIR=$work/state KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-$work/cache}

good=examples/candidates/cuda/01_relu.py
list=()
for f in illegal_address kernel_trap launch_failure device_oom hang; do list+=("tests/gpu_failures/$f.py" "$good"); done
start=$(date +%s)
"$KFORGE" -q eval examples/problems/01_relu.py "${list[@]}" --target cuda --timeout 10 --no-compile-baseline \
  --trials 2 --reps 10 --python "$PYTHON" --json "$out" || true
echo "${#list[@]} evaluations in $(( $(date +%s) - start )) s"
"$PYTHON" - "$out" <<'PY'
import json, sys
evaluations = json.load(open(sys.argv[1]))["evaluations"]
print("| # | candidate | status | kind | wall s | reference | candidate process |")
print("| ---: | --- | --- | --- | ---: | --- | --- |")
ok = True
for i, e in enumerate(evaluations):
    name = e["candidate"].rsplit("/", 1)[1]
    kind = e.get("error", {}).get("kind", "")
    w = e["env"]["workers"]
    print(f"| {i + 1} | {name} | {e['status']} | {kind} | {e['wall_seconds']:.2f} | "
          f"{w['reference']['origin']} ({w['reference']['evaluation']}) | {w['candidate']['origin']} |")
    expect_correct = i % 2 == 1
    ok &= (e["status"] == "correct") == expect_correct
print(f"\nfailures reported as failures and every correct candidate after one correct: {'yes' if ok else 'NO'}")
sys.exit(0 if ok and len(evaluations) == 10 else 1)
PY
