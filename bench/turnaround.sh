#!/usr/bin/env bash
# Per-candidate turnaround of `kforge eval`: build + correctness trials + timing, without the
# torch.compile baseline (--no-compile-baseline), for fast-path candidates at the problems' own sizes
# (what is measured is the harness, not the kernels).
# One evaluation per kforge process (both workers start for it):
#   cold    a fresh compile cache (KFORGE_CACHE_DIR) per run; the device's measured peaks (sol.py,
#           measured once per machine) are copied in, so only the candidate's own work counts
#   cached  the same candidate again, with the cache its cold run left
# Several candidates in one `kforge eval P C1 C2 ...` (the worker pool, as in `kforge run`): the
# reference process is kept and each next candidate process starts while the one before is checked.
#   pool-cold    a kernel source never built before (a comment makes each variant new)
#   pool-cached  a variant evaluated before (its build is a cache hit)
# For these the turnaround is the evaluation's wall time less the wait, before its timing, for the
# *next* candidate's process to finish starting: the loop spends that time waiting for the LLM.
# Target: cuda when torch sees a GPU, else cpu; TARGET=cpu|cuda chooses.
#
#   bash bench/turnaround.sh [RUNS]        # RUNS cold and RUNS cached evaluations per candidate (3)
# Environment: KFORGE_BIN (default dist/bin/kforge, then build/kforge), PYTHON (default .venv/bin/python,
# then /opt/torch/.venv/bin/python3, then python3). Needs scripts/setup.sh (or a bundle) first.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
case $runs in '' | *[!0-9]* | 0) echo "usage: bash bench/turnaround.sh [RUNS], RUNS a positive integer" >&2; exit 2 ;; esac

. bench/turnaround_env.sh

work=$(mktemp -d /tmp/kforge-turnaround-XXXXXX)
trap 'rm -rf "$work"' EXIT
export KFORGE_HOME=$PWD KFORGE_STATE_DIR=$work/state
# Fast-path candidates: kforge_kernels.native (cpu) and kforge_kernels.cuda (NVRTC).
candidates="01_relu 14_mean_std_tuple"

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;" \
  "$("$py" -c 'import torch; print("torch", torch.__version__, "|", torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")')"
echo "target: $target; kforge: $kforge; $runs cold + $runs cached evaluations per candidate"

# One evaluation: its JSON goes to $work/json/NAME.json, and NAME, STATE, wall ms and CPU ms (kforge
# and its workers, user + system: what a busy machine does not inflate) to $work/rows.tsv.
evaluate() {
  local name=$1 state=$2 problem=$3 candidate=$4
  "$py" -c '
import resource, subprocess, sys, time
start = time.perf_counter()
with open(sys.argv[3], "w") as log:
    subprocess.run(sys.argv[4:], stdout=log, stderr=subprocess.STDOUT)
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(sys.argv[1], sys.argv[2], round(wall * 1000), round((usage.ru_utime + usage.ru_stime) * 1000), sep="\t")
' "$name" "$state" "$work/logs/$name.txt" "$kforge" -q eval "$problem" "$candidate" --target "$target" \
    --no-compile-baseline --python "$py" --json "$work/json/$name.json" >> "$work/rows.tsv"
}

mkdir -p "$work/json" "$work/logs"
: > "$work/rows.tsv"
# Peaks first (once per machine), so cold runs measure the candidate, not the device.
echo "measuring the device's peaks once (not counted)..."
KFORGE_CACHE_DIR=$work/peaks-cache evaluate peaks none examples/problems/01_relu.py \
  "examples/candidates/$target/01_relu.py"
for p in $candidates; do
  for i in $(seq 1 "$runs"); do
    cache=$work/cache-$p-$i
    mkdir -p "$cache"
    if [ -d "$work/peaks-cache/peaks" ]; then cp -r "$work/peaks-cache/peaks" "$cache/"; fi
    KFORGE_CACHE_DIR=$cache evaluate "$p-cold-$i" cold "examples/problems/$p.py" "examples/candidates/$target/$p.py"
    echo "  $p cold $i done"
  done
  for i in $(seq 1 "$runs"); do
    KFORGE_CACHE_DIR=$work/cache-$p-1 evaluate "$p-cached-$i" cached "examples/problems/$p.py" \
      "examples/candidates/$target/$p.py"
    echo "  $p cached $i done"
  done
done

# Pool: variants 1-4 are new sources, then variant 4 twice more (cache hits). Variant 1 starts its
# own workers; the others find them started. load_inline (cuda only): one cold build (tens of
# seconds, as in any harness), then the same source twice with a warm pool.
pool() {
  local name=$1 problem=$2 candidate=$3 count=$4
  local dir=$work/pool-$name cache=$work/pool-cache-$name
  mkdir -p "$dir" "$cache"
  if [ -d "$work/peaks-cache/peaks" ]; then cp -r "$work/peaks-cache/peaks" "$cache/"; fi
  "$py" - "$candidate" "$dir" "$count" <<'PY'
import pathlib, sys
src, out, count = pathlib.Path(sys.argv[1]).read_text(), pathlib.Path(sys.argv[2]), int(sys.argv[3])
mark = next(m for m in ("__global__", 'extern "C"') if m in src)
for k in range(1, count + 1):
    (out / f"v{k}.py").write_text(src.replace(mark, f"/* variant {k} */ {mark}", 1))
PY
  local list=()
  for k in $(seq 1 "$count"); do list+=("$dir/v$k.py"); done
  list+=("$dir/v$count.py" "$dir/v$count.py")
  KFORGE_CACHE_DIR=$cache "$kforge" -q eval "$problem" "${list[@]}" --target "$target" --no-compile-baseline \
    --python "$py" --json "$work/json/pool-$name.json" > "$work/logs/pool-$name.txt" 2>&1 || true
  echo "  pool $name done"
}
pool 01_relu examples/problems/01_relu.py "examples/candidates/$target/01_relu.py" 4
pool 14_mean_std_tuple examples/problems/14_mean_std_tuple.py "examples/candidates/$target/14_mean_std_tuple.py" 4
if [ "$target" = cuda ]; then
  pool load_inline targets/cuda/example_reference.py targets/cuda/example_candidate_load_inline.py 1
fi

"$py" - "$work" <<'EOF'
import glob, json, os, statistics, sys

work = sys.argv[1]
phases = ["start_and_load_problem", "screen_candidate", "load_candidate", "correctness_trials", "timing", "shutdown"]
short = ["start+load", "screen", "load_cand", "trials", "timing", "shutdown"]
rows = [(n, s, int(ms) / 1000, int(cpu) / 1000)
        for n, s, ms, cpu in (line.rstrip("\n").split("\t") for line in open(os.path.join(work, "rows.tsv")))]
print()
print("| run | status | process s | CPU s | eval s | build s (hit) | " + " | ".join(f"{s} s" for s in short) + " |")
print("| --- | --- | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in short) + " |")
totals = {}
for name, state, seconds, cpu in rows:
    if state == "none":
        continue
    try:
        d = json.load(open(os.path.join(work, "json", f"{name}.json")))
    except (OSError, ValueError):
        print(f"| {name} | no result (see the log) | {seconds:.2f} | {cpu:.2f} | | | " + " | ".join("" for _ in short) + " |")
        continue
    ph = d.get("phases_s", {})
    events = d.get("build", {}).get("events", [])
    hit = "/".join("hit" if e.get("cache_hit") else "miss" for e in events) or "none"
    build = d.get("build", {}).get("load_seconds", 0.0)
    print(f"| {name} | {d.get('status')} | {seconds:.2f} | {cpu:.2f} | {d.get('wall_seconds', 0):.2f} | {build:.2f} ({hit}) | "
          + " | ".join(f"{ph[p]:.3f}" if p in ph else "-" for p in phases) + " |")
    totals.setdefault(state, []).append((seconds, cpu))
print()
goals = {"cold": 3.0, "cached": 1.5}
for state, values in totals.items():
    med = statistics.median(v[0] for v in values)
    print(f"- {state}: median {med:.2f} s wall, {statistics.median(v[1] for v in values):.2f} s CPU over {len(values)} "
          f"evaluations (goal <= {goals[state]:.1f} s wall: {'met' if med <= goals[state] else 'not met'})")

print()
print("Several candidates in one `kforge eval` (worker pool):")
print()
print("| candidate | # | kind | status | wall s | waited for next worker s | turnaround s | build s (hit) | "
      + " | ".join(f"{s} s" for s in short) + " |")
print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in short) + " |")
pool = {}
for path in sorted(glob.glob(os.path.join(work, "json", "pool-*.json"))):
    name = os.path.basename(path)[len("pool-"):-len(".json")]
    evaluations = json.load(open(path))["evaluations"]
    sources = [e["candidate_sha256"] for e in evaluations]
    for i, e in enumerate(evaluations):
        events = e.get("build", {}).get("events", [])
        hit = "/".join("hit" if ev.get("cache_hit") else "miss" for ev in events) or "none"
        fresh = e["env"]["workers"]["candidate"]["origin"] == "started"
        kind = "fresh workers" if fresh else ("pool-cached" if sources[i] in sources[:i] else "pool-cold")
        wall = e["wall_seconds"]
        waited = e.get("timing", {}).get("waited_for_worker_start_seconds", 0.0)
        turnaround = wall - waited
        ph = e.get("phases_s", {})
        print(f"| {name} | {i + 1} | {kind} | {e['status']} | {wall:.2f} | {waited:.2f} | {turnaround:.2f} | "
              f"{e.get('build', {}).get('load_seconds', 0):.2f} ({hit}) | "
              + " | ".join(f"{ph[p]:.3f}" if p in ph else "-" for p in phases) + " |")
        if not fresh:
            family = "load_inline" if name == "load_inline" else "fast path"
            pool.setdefault((family, kind), []).append((turnaround, wall))
print()
for (family, kind), values in sorted(pool.items()):
    goal = 1.5 if kind == "pool-cached" else 3.0
    med = statistics.median(v[0] for v in values)
    print(f"- {family}, {kind}: median turnaround {med:.2f} s (goal <= {goal:.1f} s: {'met' if med <= goal else 'not met'}), "
          f"median wall back to back {statistics.median(v[1] for v in values):.2f} s, {len(values)} evaluations")
print(f"- load average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
EOF
