#!/usr/bin/env bash
# GPU run of `kforge bench --candidates`: the bundled cuda candidates against the bundled problems
# on every listed GPU, then kill -9 midway and --resume on a second bench, then the HTML report
# and (where chromium is installed) its screenshot.
#
#   bash bench/gpu_bench.sh                      # from the repository root, on a GPU machine
# Environment: KFORGE_BIN (default dist/bin/kforge, then build/kforge), PYTHON (the worker's
# interpreter; default /opt/torch/.venv/bin/python3, then python3), DEVICES (default cuda:0, e.g.
# cuda:0,cuda:1), JOBS (default: 2 per GPU). Results in $OUT when set, else bench/results/<date>-bench/:
# bench.log, report.{md,json,html}, resume.log, report.png.
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
RUN=${OUT:-$ROOT/bench/results/$(date +%Y%m%d-%H%M%S)-bench}
mkdir -p "$RUN"
. "$ROOT/bench/gpu_env.sh"
[ -n "$KFORGE" ] || { echo "gpu_bench: no kforge binary (build it or set KFORGE_BIN)"; exit 2; }
export KFORGE_HOME=$ROOT KFORGE_STATE_DIR=$RUN/state KFORGE_CACHE_DIR=$RUN/cache
# A bundle carries Chart.js for the HTML report (the GPU machines lack Debian's libjs-chart.js).
[ -z "${KFORGE_CHARTJS:-}" ] && [ -f "$ROOT/dist/share/chart.min.js" ] && export KFORGE_CHARTJS=$ROOT/dist/share/chart.min.js
DEVICES=${DEVICES:-cuda:0}
JOBS=${JOBS:-0}
common=(--target cuda --candidates examples/candidates/cuda --device "$DEVICES" --jobs "$JOBS" --python "$PYTHON" --seed 1)

echo "== bench of the bundled cuda candidates on $DEVICES"
"$KFORGE" bench examples/problems "${common[@]}" --out "$RUN/full" 2>&1 | tee "$RUN/bench.log"
cp "$RUN/full/report."* "$RUN/" 2>/dev/null

echo "== kill -9 midway, then --resume"
db=$RUN/state/kforge.db
bench=$("$PYTHON" -c "import sqlite3; print((sqlite3.connect('$db').execute('SELECT MAX(id) FROM benches').fetchone()[0] or 0) + 1)")
"$KFORGE" bench examples/problems "${common[@]}" --out "$RUN/resumed" > "$RUN/resume.log" 2>&1 &
pid=$!
for _ in $(seq 600); do
  done_now=$("$PYTHON" -c "import sqlite3; print(sqlite3.connect('$db').execute(\"SELECT COUNT(*) FROM bench_problems WHERE bench_id = $bench AND status = 'done'\").fetchone()[0])" 2>/dev/null || echo 0)
  [ "${done_now:-0}" -ge 4 ] && break
  sleep 0.5
done
kill -9 $pid; wait $pid 2>/dev/null
evals_before=$("$PYTHON" -c "import sqlite3; print(sqlite3.connect('$db').execute('SELECT COUNT(*) FROM evaluations').fetchone()[0])")
echo "killed bench $bench with $done_now problems done, $evals_before evaluations stored" | tee -a "$RUN/resume.log"
"$KFORGE" bench --resume "$bench" >> "$RUN/resume.log" 2>&1
"$PYTHON" - "$db" "$bench" <<'PY' | tee -a "$RUN/resume.log"
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
bench = int(sys.argv[2])
rows = con.execute("SELECT name, status, evaluation_id, check_evaluation_id FROM bench_problems WHERE bench_id = ?", (bench,)).fetchall()
ids = [i for _, _, e, c in rows for i in (e, c) if i]
print(f"bench {bench}: {sum(s == 'done' for _, s, _, _ in rows)}/{len(rows)} done, "
      f"{len(ids)} evaluations referenced, {len(set(ids))} distinct")
PY

if command -v chromium > /dev/null; then
  chromium --headless=new --disable-gpu --no-sandbox --user-data-dir="$RUN/chromium" --window-size=1200,2600 \
    --virtual-time-budget=5000 --screenshot="$RUN/report.png" "file://$RUN/report.html" > /dev/null 2>&1
fi
echo "== results in $RUN"
ls "$RUN"
