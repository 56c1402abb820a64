#!/usr/bin/env bash
# Does the refinement loop make a capable model faster? KernelBench level-1/level-2 problems,
# unmodified at their own sizes, on the cuda target: `kforge run` answered through `manual:` by a
# model (a person or an LLM session reading each request file alone), against the same model's
# single-shot kernels from KernelBench's own one-shot prompt, both judged by kforge.
#
#   bash bench/loop_quality.sh KERNELBENCH_DIR STEP
#
# STEP: init     copies the problems (bench/loop_quality.txt) into $STATE/problems unchanged and
#                renders KernelBench's one-shot prompt for each (KernelBench's own prompt code) into
#                $STATE/single/NAME/request.md; the model answers in $STATE/single/NAME/reply.md
#       loop     starts or resumes one `kforge run` per problem (--rounds $ROUNDS, manual:
#                $STATE/loop/NAME, transcript parts in $STATE/transcripts); each run goes on until it
#                needs a reply that is not written yet ([llm.manual] timeout_s = 5), then stops;
#                written single-shot replies are evaluated too (`kforge eval`, once each)
#                (SINGLE_KFORGE: another kforge for these, e.g. a newer build while the loops keep
#                the one they started with, so that resumed requests stay byte-identical)
#       advance  resumes the runs waiting on an analysis reply that is written: no device needed
#       pending  lists the requests waiting for a reply (loop and single-shot)
#       report   bench/loop_quality_report.py: the table (round 0, best, single-shot; geomeans)
# Between `loop` calls the model writes the replies the `pending` step lists; `loop` again picks
# them up (a resumed run takes the reply written for the request it stopped at).
# $STATE (default kforge-out/loop-quality) holds everything: carry it between GPU machine calls.
# It must be at the same absolute path on every call (runs store their problem's path).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/gpu_env.sh"
kb=${1:?usage: loop_quality.sh KERNELBENCH_DIR STEP}
step=${2:?usage: loop_quality.sh KERNELBENCH_DIR STEP}
STATE=$(mkdir -p "${STATE:-$ROOT/kforge-out/loop-quality}" && cd "${STATE:-$ROOT/kforge-out/loop-quality}" && pwd)
ROUNDS=${ROUNDS:-3}
# Runs at once: compiles overlap, timing is one at a time (kforge's device lock). On a machine whose
# cache is empty, the first load_inline builds have no precompiled headers and take minutes each;
# with four loops and the single-shot evaluations building at once on an H100 machine, none of them
# finished in 8 minutes. JOBS=1 for a first call lets the first build make the headers (a build
# that finds them took 13 s).
JOBS=${JOBS:-4}
export KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-/tmp/loop-quality-cache}

problems() { grep -v '^\s*#' "$ROOT/bench/loop_quality.txt" | grep -v '^\s*$'; }
name_of() { basename "$1" .py; }

# One problem's loop: start it, or resume it where it stopped. Prints one status line.
loop_one() {
  local p=$1 name db log part status
  name=$(name_of "$p")
  db=$STATE/db/$name/kforge.db
  mkdir -p "$STATE/db/$name" "$STATE/transcripts" "$STATE/logs"
  part=$(ls "$STATE/logs/$name".call*.log 2>/dev/null | wc -l)  # one log and transcript part per call
  log=$STATE/logs/$name.call$part.log
  local record=$STATE/transcripts/$name.part$part.jsonl
  if [ -f "$STATE/db/$name/finished" ]; then echo "$name: finished"; return; fi
  if [ -f "$db" ]; then
    KFORGE_CONFIG=$STATE/kforge.toml "$KFORGE" run --resume 1 --db "$db" --record "$record" \
      --json "$STATE/db/$name/summary.json" >"$log" 2>&1
  else
    KFORGE_CONFIG=$STATE/kforge.toml "$KFORGE" run "$STATE/problems/$p" --target cuda --python "$PYTHON" \
      --llm "manual:$STATE/loop/$name" --rounds "$ROUNDS" --db "$db" -o "$STATE/out/$name" \
      --record "$record" --json "$STATE/db/$name/summary.json" >"$log" 2>&1
  fi
  status=$?
  [ -s "$record" ] || rm -f "$record"  # a call that asked the model nothing new leaves no part
  if grep -q "no reply to request" "$log"; then
    echo "$name: waiting for $(grep -o 'expected [^ ]*' "$log" | tail -1 | sed 's/expected //')"
  elif [ $status -eq 0 ]; then
    touch "$STATE/db/$name/finished"
    echo "$name: finished ($(grep -E 'best|Keep' "$log" | tail -1))"
  else
    echo "$name: exit $status, see $log: $(tail -2 "$log" | tr '\n' ' ')"
  fi
}

# The single-shot reply's last python block, judged once by `kforge eval` at its defaults.
single_one() {
  local p=$1 name dir
  name=$(name_of "$p")
  dir=$STATE/single/$name
  [ -f "$dir/reply.md" ] || { echo "$name single-shot: waiting for $dir/reply.md"; return; }
  [ -f "$dir/eval.json" ] && { echo "$name single-shot: evaluated"; return; }
  "$PYTHON" "$ROOT/bench/loop_quality_report.py" extract "$dir/reply.md" "$dir/candidate.py" || return
  "${SINGLE_KFORGE:-$KFORGE}" eval "$STATE/problems/$p" "$dir/candidate.py" --target cuda --python "$PYTHON" \
    --json "$dir/eval.json.partial" >"$dir/eval.log" 2>&1
  [ -s "$dir/eval.json.partial" ] && mv "$dir/eval.json.partial" "$dir/eval.json"
  echo "$name single-shot: $(grep -m1 -E 'status|correct|rejected|error' "$dir/eval.log")"
}

case "$step" in
  init)
    for p in $(problems); do
      [ -f "$kb/KernelBench/$p" ] || { echo "loop_quality.sh: no $kb/KernelBench/$p" >&2; exit 2; }
      mkdir -p "$STATE/problems/$(dirname "$p")" "$STATE/single/$(name_of "$p")"
      cp "$kb/KernelBench/$p" "$STATE/problems/$p"
      PYTHONPATH=$kb/src "$PYTHON" - "$kb/KernelBench/$p" "$STATE/single/$(name_of "$p")/request.md" <<'EOF'
# KernelBench's own prompt code; its LLM clients and progress bars are not needed to render a
# prompt, so they are stood in for rather than installed.
import sys, tomllib, types
for name, attrs in {"dotenv": {"load_dotenv": lambda *a, **k: None}, "tqdm": {"tqdm": lambda x=None, **k: x},
                    "openai": {"OpenAI": object}, "litellm": {"completion": None}}.items():
    sys.modules.setdefault(name, types.SimpleNamespace(**attrs))
sys.modules.setdefault("tomli", tomllib)
from kernelbench.prompt_constructor_toml import get_prompt_for_backend
source = open(sys.argv[1]).read()
prompt = get_prompt_for_backend(source, backend="cuda", option="one_shot", precision="fp32")
open(sys.argv[2], "w").write(prompt)
EOF
    done
    printf '[llm.manual]\ntimeout_s = 5\n' >"$STATE/kforge.toml"
    echo "loop_quality: $(problems | wc -l) problems in $STATE"
    ;;
  loop)
    [ -n "$KFORGE" ] || { echo "loop_quality.sh: no kforge binary (build it or carry dist/)" >&2; exit 2; }
    export -f loop_one single_one name_of
    export STATE ROOT KFORGE PYTHON ROUNDS SINGLE_KFORGE
    # The single-shot evaluations run beside the loops (timing still takes turns on the device lock).
    ( for p in $(problems); do single_one "$p"; done ) &
    problems | xargs -P "$JOBS" -I{} bash -c 'loop_one {}'
    wait
    ;;
  advance)
    # Runs stopped at an analysis request that now has its reply: taking it and writing the next
    # generation request needs no device (the baseline and the profiles are stored; shapes need
    # only the reference on the CPU), so this may run on any machine with the worker's Python.
    for p in $(problems); do
      name=$(name_of "$p")
      last=$(ls "$STATE/logs/$name".call*.log 2>/dev/null | sort -V | tail -1)
      [ -n "$last" ] || continue
      reply=$(grep -o 'expected [^ ]*' "$last" | tail -1 | sed 's/expected //')
      [ -n "$reply" ] && [ -f "$reply" ] || continue
      request=${reply/reply-/request-}; request=${request%.md}.json
      if grep -q '"text": "You are a performance analyst' "$request"; then loop_one "$p"; fi
    done
    ;;
  pending)
    "$PYTHON" "$ROOT/bench/loop_quality_report.py" pending "$STATE"
    ;;
  report)
    "$PYTHON" "$ROOT/bench/loop_quality_report.py" report "$STATE" "$ROOT/bench/loop_quality.txt"
    ;;
  *) echo "loop_quality.sh: unknown step $step (init, loop, pending, report)" >&2; exit 2 ;;
esac
