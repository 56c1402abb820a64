#!/usr/bin/env bash
# kforge bench across the GPUs of one host: the real-size suite (bench/realsize: KernelBench problems
# at their own sizes, honest candidates) benched with 1, 2, ..., N GPUs, by the local executor
# (--device cuda:0,...,cuda:k-1, two problems in progress per GPU) and, where the interpreter has the
# ray package, by the Ray executor (a local Ray instance limited to k GPUs). Then
# bench/multi_gpu_report.py: evaluations per minute per GPU count, and whether each problem's
# speedup intervals agree across GPU counts.
#   bash bench/multi_gpu.sh KERNELBENCH_DIR [MAX_GPUS]     (default: every GPU torch sees)
# Results go to $RESULTS (default $OUT when set, else bench/results/multi-gpu-<date>).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/gpu_env.sh"
kb=$(cd "${1:?usage: multi_gpu.sh KERNELBENCH_DIR [MAX_GPUS]}" && pwd)/KernelBench
[ -n "$KFORGE" ] || { echo "multi_gpu.sh: no kforge binary (build it or carry dist/)" >&2; exit 2; }
gpus=${2:-$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())')}
[ "$gpus" -ge 1 ] 2>/dev/null || { echo "multi_gpu.sh: no GPU" >&2; exit 2; }
RESULTS=${RESULTS:-${OUT:-$ROOT/bench/results/multi-gpu-$(date +%Y%m%d)}}
mkdir -p "$RESULTS"
export KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-/tmp/multi-gpu-kforge-cache}
suite=$(mktemp -d)/realsize.txt
grep -v '^\s*#' "$ROOT/bench/realsize/problems.txt" | grep -v '^\s*$' | sed "s|^|$kb/|" >"$suite"
candidates=$ROOT/bench/realsize/candidates

# One bench first fills the build cache, so every measured bench times evaluations, not nvcc.
"$KFORGE" eval "$(head -1 "$suite")" "$candidates/$(basename "$(head -1 "$suite")")" --target cuda \
  --python "$PYTHON" --compile-only >/dev/null 2>&1
while read -r p; do
  "$KFORGE" eval "$p" "$candidates/$(basename "$p")" --target cuda --python "$PYTHON" --compile-only \
    >"$RESULTS/prebuild-$(basename "$p" .py).log" 2>&1 &
done <"$suite"
wait

has_ray=$("$PYTHON" -c 'import ray' 2>/dev/null && echo yes || echo no)
echo "multi_gpu: $gpus GPU(s), ray importable: $has_ray" | tee "$RESULTS/setup.txt"
for k in $(seq 1 "$gpus"); do
  devices=$(seq -s, -f 'cuda:%g' 0 $((k - 1)))
  echo "== local executor, $k GPU(s): --device $devices --jobs $((2 * k))"
  "$KFORGE" bench "$suite" --target cuda --candidates "$candidates" --python "$PYTHON" \
    --device "$devices" --jobs $((2 * k)) --out "$RESULTS/local-$k" >"$RESULTS/local-$k.log" 2>&1
  echo "exit $?" >>"$RESULTS/local-$k.log"
  if [ "$has_ray" = yes ]; then
    echo "== ray executor, $k GPU(s)"
    CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((k - 1))) "$KFORGE" bench "$suite" --target cuda \
      --candidates "$candidates" --python "$PYTHON" --executor ray --out "$RESULTS/ray-$k" \
      >"$RESULTS/ray-$k.log" 2>&1
    echo "exit $?" >>"$RESULTS/ray-$k.log"
  fi
done
"$PYTHON" "$ROOT/bench/multi_gpu_report.py" "$RESULTS" | tee "$RESULTS/README.md"
