#!/usr/bin/env bash
# Nsight Compute on a sandboxed candidate (GPU machine, about a minute): the cuda target's example
# candidate profiled by `kforge profile` inside bubblewrap, then `kforge doctor`'s sandboxed-ncu check.
# Before the sandbox bound ncu's install tree, every profile of a sandboxed candidate failed with
# "nsight-compute directory is not found under /usr/local/cuda-13.0/bin/../".
#
#   bash bench/ncu_sandbox.sh        # from the repository root; prints ok/FAIL lines, exit 1 on a FAIL
# Environment: KFORGE_BIN, PYTHON (bench/gpu_env.sh); OUT (default: a temporary folder) keeps the logs.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
. "$ROOT/bench/gpu_env.sh"
RUN=${OUT:-$(mktemp -d /tmp/ncu-sandbox.XXXXXX)}
mkdir -p "$RUN"
export KFORGE_HOME=$ROOT KFORGE_STATE_DIR=$RUN/state KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-$RUN/cache} PYTHONUNBUFFERED=1
fails=0
ok() { echo "ok    $*"; }
fail() { echo "FAIL  $*"; fails=$((fails + 1)); }

[ -n "$KFORGE" ] || { echo "FAIL  no kforge binary (KFORGE_BIN, dist/bin/kforge or build/kforge)"; exit 1; }
NCU=$(command -v ncu || true)
[ -n "$NCU" ] || { echo "FAIL  ncu not found on PATH, /usr/local/cuda/bin or /opt/nvidia/nsight-compute"; exit 1; }
command -v bwrap > /dev/null || { echo "FAIL  bubblewrap (bwrap) is not installed: candidates would not be sandboxed"; exit 1; }
echo "kforge $KFORGE, python $PYTHON, ncu $NCU ($(readlink -f "$NCU")), logs in $RUN"

timeout 170 "$KFORGE" profile targets/cuda/example_reference.py targets/cuda/example_candidate.py \
  --target cuda --python "$PYTHON" --reps 5 --profiler-reps 2 --ncu "$NCU" --ncu-timeout 120 --json "$RUN/profile.json" \
  > "$RUN/profile.out" 2>&1
rc=$?
if [ ! -s "$RUN/profile.json" ]; then
  fail "kforge profile wrote no document (exit $rc): $(tail -3 "$RUN/profile.out" | tr '\n' ' ')"
else
  "$PYTHON" - "$RUN/profile.json" <<'PY' || fails=$((fails + 1))
import json, sys
doc = json.load(open(sys.argv[1]))
ncu = doc.get("ncu", {})
isolation = doc.get("isolation", "?")
kernels = doc.get("sides", {}).get("candidate", {}).get("ncu", {}).get("kernels", [])
if ncu.get("status") != "ok":
    print(f"FAIL  ncu on the sandboxed candidate: {ncu.get('status')}: {ncu.get('note', '')}")
    sys.exit(1)
if not kernels:
    print("FAIL  ncu ran but reported no kernel of the candidate")
    sys.exit(1)
k = kernels[0]
print(f"ok    ncu profiled the sandboxed candidate ({isolation}): {len(kernels)} kernel(s), the first "
      f"{k.get('duration_us_per_call')} us, DRAM {k.get('dram_pct')}%, SM {k.get('sm_pct')}%")
PY
  grep -q '"isolation": *"bubblewrap"' "$RUN/profile.json" && ok "the candidate ran in bubblewrap" \
    || echo "info  the profile document does not say bubblewrap (check $RUN/profile.out)"
fi

timeout 170 "$KFORGE" doctor --python "$PYTHON" > "$RUN/doctor.out" 2>&1
line=$(grep "ncu, sandboxed" "$RUN/doctor.out" || true)
case "$line" in
  ok*) ok "kforge doctor: $line" ;;
  "") fail "kforge doctor has no sandboxed-ncu line (a GPU, ncu and bwrap should make one): $(tail -2 "$RUN/doctor.out" | tr '\n' ' ')" ;;
  *) fail "kforge doctor: $line" ;;
esac
[ "$fails" -eq 0 ] && echo "ok    all" || echo "FAIL  $fails check(s)"
exit $(( fails > 0 ))
