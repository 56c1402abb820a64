#!/usr/bin/env bash
# `kforge model --hf-config` on one GPU, in under 5 minutes, without an LLM (--top 0: no region goes
# through the loop): a Llama-style decoder of about 1.1B parameters in bf16 (hidden 2048, MLP 8192,
# 16 layers, 32 heads, 8 KV heads, vocabulary 32000) built from its config with random weights, at
# batch 8 with a 512-token prompt and 64 decode steps; its profile, its regions as problems, and eager
# against torch.compile end to end (prefill and decode tokens/s); then Liger-Kernel's patched model
# beside eager where liger_kernel imports (bench/model_liger.py). Prints `ok ...`/`FAIL ...` lines
# and the report's tables. With a KernelBench folder, two of its level-3 models the same way, at their
# own sizes (each in under 2 minutes).
#
#   bash bench/model_gpu.sh [KERNELBENCH_DIR]   # from the repository root; KFORGE_BIN, PYTHON as in gpu_env.sh
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
. "$ROOT/bench/gpu_env.sh"
[ -n "$KFORGE" ] || { echo "FAIL no kforge binary (build/kforge or KFORGE_BIN)"; exit 1; }
if ! "$PYTHON" -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  echo "FAIL $PYTHON has no torch with a GPU"; exit 1
fi
if ! V=$("$PYTHON" -c "import transformers; print(transformers.__version__)" 2>&1); then
  echo "FAIL transformers is missing from $PYTHON (pip install transformers, or a carried wheel): ${V##*$'\n'}"; exit 1
fi
echo "ok transformers $V, torch $("$PYTHON" -c 'import torch; print(torch.__version__)')"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export KFORGE_HOME=$ROOT KFORGE_STATE_DIR=$WORK/state KFORGE_CACHE_DIR=$WORK/cache
OUT=$WORK/model
mapfile -t LLAMA_1B < <(grep -v '^#' "$ROOT/bench/llama_1b.args")
start=$(date +%s)
timeout 270 "$KFORGE" model --hf-config llama "${LLAMA_1B[@]}" --target cuda --top 0 --python "$PYTHON" \
  -o "$OUT" --json "$WORK/report.json" > "$WORK/model.log" 2>&1
rc=$?
echo "kforge model: exit $rc after $(( $(date +%s) - start )) s"
if [ $rc -ne 0 ] || [ ! -f "$WORK/report.json" ]; then
  echo "FAIL kforge model --hf-config llama (exit $rc; 124: past 270 s)"; tail -25 "$WORK/model.log"; exit 1
fi
"$PYTHON" - "$WORK/report.json" "$OUT/analysis.json" <<'PY'
import json, sys
rep, an = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
fails = 0
def check(ok, what):
    global fails
    print(("ok " if ok else "FAIL ") + what)
    fails += not ok
kinds = {r["kind"] for r in rep["regions"]}
check(rep["capture"]["method"] == "torch.export", f"graph capture: {rep['capture']['method']} {rep['capture']['fallback_reason']}")
check({"norm", "mlp", "attention"} <= kinds, f"regions: {sorted(kinds)}")
problems = [r for r in rep["regions"] if r.get("problem")]
check(len(problems) >= 2, f"{len(problems)} regions written as problems: {', '.join(r['name'] + ' ' + r['kind'] for r in problems)}")
for r in rep["regions"][:6]:
    print(f"   {r['name']:<10} {r['kind']:<10} {r['share']:6.1%}  {r['calls']} call(s)" + (f"  skipped: {r['skipped'][:80]}" if r.get("skipped") else ""))
check(an["decode"] and an["decode"]["steps"] == 64, f"decode settings: {an['decode']}")
for name in ("eager", "torch.compile"):
    v = rep["variants"].get(name)
    if not v:
        check(False, f"{name}: not measured ({rep.get('variant_errors', {}).get(name, 'no variant')})")
        continue
    check(v["prefill_tokens_per_s"]["median"] > 0 and v["decode_tokens_per_s"]["median"] > 0,
          f"{name}: prefill {v['ms']['median']:.2f} ms ({v['prefill_tokens_per_s']['median']:,.0f} tokens/s), "
          f"decode {v['decode_ms']['median']:.2f} ms ({v['decode_tokens_per_s']['median']:,.0f} tokens/s)"
          + (f", speedup prefill {v['speedup_vs_eager']['median']:.2f}x decode {v['decode_speedup_vs_eager']['median']:.2f}x"
             if name != "eager" else ""))
print(f"model: {'ok' if not fails else f'{fails} FAIL'}")
sys.exit(1 if fails else 0)
PY
model_rc=$?
sed -n '/## End to end/,$p' "$OUT/report.md"
timeout 90 "$PYTHON" "$ROOT/bench/model_liger.py" "$OUT" 8 || echo "FAIL bench/model_liger.py (exit $?; 124: past 90 s)"

# KernelBench level-3 models, unmodified: their profile, regions and eager against torch.compile.
kb=${1:-}
for m in 44_MiniGPTBlock 9_ResNet18; do
  [ -n "$kb" ] || break
  f=$kb/KernelBench/level3/$m.py
  [ -f "$f" ] || { echo "FAIL no $f"; model_rc=1; continue; }
  start=$(date +%s)
  timeout 120 "$KFORGE" model "$f" --target cuda --top 0 --python "$PYTHON" --profile-reps 5 --e2e-reps 10 \
    -o "$WORK/$m" --json "$WORK/$m.json" > "$WORK/$m.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL kforge model $m (exit $rc; 124: past 120 s)"; tail -15 "$WORK/$m.log"; model_rc=1; continue; fi
  echo "ok kforge model $m: $(( $(date +%s) - start )) s"
  head -45 "$WORK/$m/report.md"
done
[ -n "${RESULTS:-}" ] && mkdir -p "$RESULTS" && cp -r "$WORK"/*.json "$WORK"/model/report.md "$RESULTS"/ 2>/dev/null
exit $model_rc
