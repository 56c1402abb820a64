#!/usr/bin/env bash
# The refinement loop on a whole model's regions on the GPU, driven by a model through `manual:` (a
# person or an LLM session answering each request file alone): KernelBench's level-3
# 44_MiniGPTBlock (or another level-3 model), unmodified at its own sizes, or the 1.1B Llama-style
# decoder of bench/llama_1b.args (bf16, random weights), through `kforge model --top K` (--target
# $TARGET, default cuda): its profile,
# its regions as problems, `kforge run` on the top K, the best kernels installed back, the model
# verified and measured end to end.
#
#   bash bench/model_loop.sh KERNELBENCH_DIR [MODEL]   # starts, or resumes where it stopped
#
# Each call goes on until a region's run needs a reply that is not written yet ([llm.manual]
# timeout_s = 5); the model then answers the requests `pending` lists ($STATE/llm/REGION/request-N.md ->
# reply-N.md) and the next call resumes. MODEL: a file under KernelBench's level3 (default
# 44_MiniGPTBlock.py), or `llama` for the decoder. TOP (default 1), ROUNDS (default 2), REGIONS
# (`--regions`: names or kinds, e.g. norm; default any), MAX_FIX (`--max-fix`, default kforge run's),
# LIMIT_S (Ctrl-C after this many seconds, so the call ends with a resumable state), EXTRA (more
# `kforge model` options for a new model, split on spaces).
# $STATE (default kforge-out/model-loop) holds everything (the model folder, the store, the requests):
# carry it between GPU machine calls, at the same absolute path each time.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/gpu_env.sh"
kb=${1:?usage: model_loop.sh KERNELBENCH_DIR [MODEL]}
which=${2:-44_MiniGPTBlock.py}
case $which in
  llama) mapfile -t source_args < <(grep -v '^#' "$ROOT/bench/llama_1b.args"); source_args=(--hf-config llama "${source_args[@]}") ;;
  *) model=$kb/KernelBench/level3/$which; [ -f "$model" ] || { echo "model_loop.sh: no $model" >&2; exit 2; }
     source_args=("$model") ;;
esac
STATE=$(mkdir -p "${STATE:-$ROOT/kforge-out/model-loop}" && cd "${STATE:-$ROOT/kforge-out/model-loop}" && pwd)
export KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-/tmp/model-loop-cache}
[ -n "$KFORGE" ] || { echo "model_loop.sh: no kforge binary (build it or carry dist/)" >&2; exit 2; }
mkdir -p "$STATE/llm" "$STATE/logs"
printf '[llm.manual]\ntimeout_s = 5\n' >"$STATE/kforge.toml"
log=$STATE/logs/call$(ls "$STATE/logs" | wc -l).log
if [ -f "$STATE/out/model.json" ]; then
  KFORGE_CONFIG=$STATE/kforge.toml ${LIMIT_S:+timeout -s INT "$LIMIT_S"} "$KFORGE" model --resume "$STATE/out" --python "$PYTHON" \
    --json "$STATE/report.json" >"$log" 2>&1
else
  KFORGE_CONFIG=$STATE/kforge.toml ${LIMIT_S:+timeout -s INT "$LIMIT_S"} "$KFORGE" model "${source_args[@]}" --target "${TARGET:-cuda}" --top "${TOP:-1}" \
    ${REGIONS:+--regions "$REGIONS"} --rounds "${ROUNDS:-2}" ${MAX_FIX:+--max-fix "$MAX_FIX"} ${EXTRA:-} --llm "manual:$STATE/llm" --python "$PYTHON" --db "$STATE/kforge.db" \
    -o "$STATE/out" --json "$STATE/report.json" >"$log" 2>&1
fi
status=$?
echo "kforge model: exit $status (log: $log)"
grep -E '^kforge model:|^  region|regions \(graph' "$log"
# Each region's run asks in a folder of its own ($STATE/llm/<the region's modules>/).
for request in "$STATE"/llm/*/request-*.md; do
  [ -f "$request" ] || continue
  reply=${request/request-/reply-}
  [ -f "$reply" ] || [ -f "${reply%.md}.json" ] || echo "pending: $request -> $(basename "$reply")"
done
[ -f "$STATE/out/report.md" ] && grep -q '"finished": true' "$STATE/out/model.json" && cat "$STATE/out/report.md"
exit 0
