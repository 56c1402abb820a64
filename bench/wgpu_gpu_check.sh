#!/usr/bin/env bash
# GPU check of the wgpu target (WGSL compute shaders through the `wgpu` package, kforge_kernels.wgsl)
# on NVIDIA's Vulkan driver, on one GPU machine without internet. What it installs comes with the
# repository root, fetched by bench/wgpu_carry.sh: .gl/ (Debian packages) and .wgpu-whl/ (wheels).
# Each step well under 10 minutes:
#   setup     .gl/: the Vulkan loader, the X client libraries NVIDIA's driver links and bubblewrap (the
#             candidate sandbox), each only where the machine lacks it (ldconfig); .wgpu-whl/: installed
#             in $WGPU_SITE (default /opt/kforge-wgpu) and put on the interpreter's own path by a .pth
#             file (kforge gives its workers a PYTHONPATH of its own, and its sandbox shows only the
#             interpreter's path); then the Vulkan driver: NVIDIA's driver file ($NVIDIA_ICD, else the
#             usual places) and, when its GLX library finds no device (no X server), a copy naming its
#             EGL library. The choice goes to $RESULTS/vulkan.env (VK_DRIVER_FILES, VK_ICD_FILENAMES,
#             WGPU_BACKEND_TYPE=Vulkan), which the later steps read; `vulkaninfo --summary` if present
#   adapters  bench/wgpu_adapter.py: every adapter wgpu sees and the helper's pick, which runs a small
#             shader (adapters.json); the same under the target's RLIMIT_AS ([sandbox] address_space_gb);
#             then `kforge eval` of 01_relu and the adapter its build recorded inside kforge's sandbox.
#             Fails unless all are Vulkan adapters named like $WGPU_EXPECT_ADAPTER (default NVIDIA: not
#             lavapipe); when only the limit breaks the driver, has the eval step lift it (address_space.env)
#   eval      `kforge eval` of every examples/candidates/wgpu candidate on its problem at the problem's
#             sizes (--no-compile-baseline), one line each in wgpu.jsonl; fails when an adapter does not
#             match. WGPU_ADDRESS_SPACE_GB sets the target's address_space_gb for it (a copy of the target)
#   report    bench/wgpu_report.py: summary.md (problem, status, speedup vs eager, adapter)
#
#   bash bench/wgpu_gpu_check.sh [STEP...]     # default: setup adapters eval report
# Results: $RESULTS (default $OUT when set, else bench/results/wgpu-gpu-<date>). Also read: PYTHON and
# KFORGE_BIN (bench/gpu_env.sh), NVIDIA_ICD, WGPU_SITE, WGPU_EXPECT_ADAPTER, WGPU_ADDRESS_SPACE_GB,
# EVAL_TIMEOUT (seconds per evaluation, 120), WGPU_CHECK_BUDGET_S (560: the eval step starts no
# evaluation that could end later, so that the report is written within a 600 s command limit).
# Dry run on a machine without a GPU (lavapipe, nothing installed):
#   WGPU_EXPECT_ADAPTER=llvmpipe bash bench/wgpu_gpu_check.sh adapters eval report
# The target's device is `cpu` (the helper copies tensors to the adapter and back on each launch), so
# the eager baseline is PyTorch on the host's CPU cores.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
source "$ROOT/bench/gpu_env.sh"
steps=${*:-setup adapters eval report}
RESULTS=${RESULTS:-${OUT:-$ROOT/bench/results/wgpu-gpu-$(date +%Y%m%d-%H%M%S)}}
mkdir -p "$RESULTS"
# This checkout's worker, targets and examples; private state and caches.
export KFORGE_HOME=$ROOT KFORGE_STATE_DIR=${KFORGE_STATE_DIR:-/tmp/wgpu-gpu-state} \
  KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-/tmp/wgpu-gpu-cache} PYTHONUNBUFFERED=1
WGPU_SITE=${WGPU_SITE:-/opt/kforge-wgpu}
WGPU_EXPECT_ADAPTER=${WGPU_EXPECT_ADAPTER:-NVIDIA}
EVAL_TIMEOUT=${EVAL_TIMEOUT:-120}  # seconds per kforge eval
BUDGET_S=${WGPU_CHECK_BUDGET_S:-560}  # no evaluation starts that could end after this many seconds of the script
LIBDIR=/usr/lib/x86_64-linux-gnu

run_step() {  # NAME: runs step_NAME, output in $RESULTS/NAME.log, status line on stdout
  local t0=$SECONDS
  "step_$1" >"$RESULTS/$1.log" 2>&1
  local rc=$?
  echo "$1: exit $rc in $((SECONDS - t0)) s" | tee -a "$RESULTS/steps.txt"
  grep -h "FAIL" "$RESULTS/$1.log" | head -5
}

# The Vulkan adapters wgpu sees with driver file $1 ("" for the loader's defaults), one per line.
vulkan_adapters() {
  local vars=(WGPU_BACKEND_TYPE=Vulkan)
  [ -n "$1" ] && vars+=("VK_DRIVER_FILES=$1" "VK_ICD_FILENAMES=$1")
  env "${vars[@]}" timeout 120 "$PYTHON" -c '
import wgpu
for a in wgpu.gpu.enumerate_adapters_sync():
    print("%s (%s, %s)" % (a.info["device"], a.info["backend_type"], a.info["adapter_type"]))' 2>&1
}

install_missing() {  # unpacks .gl/*.deb aside; copies in each shared library ldconfig does not know, and bwrap
  command -v dpkg >/dev/null || { echo "no dpkg here: cannot unpack .gl/*.deb"; return 1; }
  local stage known link soname
  stage=$(mktemp -d)
  for deb in .gl/*.deb; do dpkg -x "$deb" "$stage" || return 1; done
  known=$(ldconfig -p | awk 'NR > 1 {print $1}')
  mkdir -p "$LIBDIR"
  while IFS= read -r link; do
    soname=$(basename "$link")
    if grep -qxF "$soname" <<<"$known"; then
      echo "library present: $soname"
    else
      cp -a "$link" "$(dirname "$link")/$(readlink "$link")" "$LIBDIR/" && echo "library installed: $LIBDIR/$soname"
    fi
  done < <(find "$stage" -type l -name 'lib*.so.[0-9]*')
  ldconfig
  # Where kforge looks for bubblewrap; without one, candidates run under process-group isolation only.
  if [ -e /usr/bin/bwrap ] || [ -e /usr/local/bin/bwrap ]; then
    echo "bubblewrap present"
  elif [ -x "$stage/usr/bin/bwrap" ]; then
    cp "$stage/usr/bin/bwrap" /usr/local/bin/bwrap && echo "bubblewrap installed: /usr/local/bin/bwrap"
    /usr/local/bin/bwrap --version
  fi
  rm -rf "$stage"
}

install_wheels() {  # .wgpu-whl/ into $WGPU_SITE, named by a .pth file of the interpreter
  local purelib
  rm -rf "$WGPU_SITE" && mkdir -p "$WGPU_SITE" || return 1
  if "$PYTHON" -m pip --version >/dev/null 2>&1; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$WGPU_SITE" .wgpu-whl/*.whl || return 1
  else
    echo "no pip in $PYTHON: unpacking the wheels (each is a zip laid out as site-packages)"
    "$PYTHON" -c 'import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]' \
      "$WGPU_SITE" .wgpu-whl/*.whl || return 1
  fi
  purelib=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || return 1
  echo "$WGPU_SITE" >"$purelib/kforge-wgpu.pth" || return 1
  echo "wheels in $WGPU_SITE, named by $purelib/kforge-wgpu.pth"
  local want
  want=$(sed -n 's/^wgpu==\([0-9.]*\).*/\1/p' worker/requirements.txt)
  "$PYTHON" -I -c 'import sys, numpy, cffi, wgpu
print("wgpu", wgpu.__version__, wgpu.__file__, "| cffi", cffi.__version__, "| numpy", numpy.__version__)
sys.exit(0 if wgpu.__version__ == sys.argv[1] else f"wgpu {wgpu.__version__} found first, not {sys.argv[1]}")' "$want"
}

choose_vulkan_driver() {  # NVIDIA's driver file (its GLX library, else its EGL one) into $RESULTS/vulkan.env
  local icd="" candidate lib tried=()
  for candidate in ${NVIDIA_ICD:-} /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json \
      /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
    [ -f "$candidate" ] && { icd=$candidate; break; }
  done
  if [ -z "$icd" ]; then
    echo "no NVIDIA Vulkan driver file: the loader's defaults stay (a machine without NVIDIA's driver)"
    : >"$RESULTS/vulkan.env"
    vulkan_adapters "" | tee "$RESULTS/vulkan-adapters.txt"
    grep -i -- "$WGPU_EXPECT_ADAPTER" "$RESULTS/vulkan-adapters.txt" | grep -q "(Vulkan," && return 0
    echo "FAIL: no NVIDIA driver file, and no Vulkan adapter named like '$WGPU_EXPECT_ADAPTER'"
    return 1
  fi
  echo "NVIDIA driver file: $icd"; cat "$icd"; echo
  tried=("$icd")
  if grep -q 'libGLX_nvidia\.so\.0' "$icd"; then
    # The GLX library wants an X server on some drivers; the EGL one is the same Vulkan driver without it.
    # Written under /usr, which the candidate sandbox shows.
    tried+=(/usr/local/share/kforge-wgpu/nvidia_egl_icd.json)
    mkdir -p /usr/local/share/kforge-wgpu && sed 's/libGLX_nvidia\.so\.0/libEGL_nvidia.so.0/' "$icd" >"${tried[1]}"
  fi
  for candidate in "${tried[@]}"; do
    echo "adapters through $candidate:"
    vulkan_adapters "$candidate" | tee "$RESULTS/vulkan-adapters.txt"
    if grep -i -- "$WGPU_EXPECT_ADAPTER" "$RESULTS/vulkan-adapters.txt" | grep -q "(Vulkan,"; then
      printf 'export VK_DRIVER_FILES=%q VK_ICD_FILENAMES=%q WGPU_BACKEND_TYPE=Vulkan\n' "$candidate" "$candidate" \
        >"$RESULTS/vulkan.env"
      echo "chosen: $(cat "$RESULTS/vulkan.env")"
      return 0
    fi
  done
  lib=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["ICD"]["library_path"])' "$icd")
  echo "FAIL: no Vulkan adapter named like '$WGPU_EXPECT_ADAPTER' through ${tried[*]}"
  local path=$lib dir
  if [[ $lib != /* ]]; then
    path=$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')
    for dir in ${LD_LIBRARY_PATH//:/ }; do [ -z "$path" ] && [ -e "$dir/$lib" ] && path=$dir/$lib; done
  fi
  if [ -z "$path" ]; then
    echo "$lib is neither in ldconfig's cache nor in LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  else
    echo "$path needs (ldd):"; ldd "$path" 2>&1
  fi
  printf 'export VK_DRIVER_FILES=%q VK_ICD_FILENAMES=%q WGPU_BACKEND_TYPE=Vulkan\n' "$icd" "$icd" >"$RESULTS/vulkan.env"
  return 1
}

step_setup() {
  ls .wgpu-whl/*.whl >/dev/null && ls .gl/*.deb >/dev/null ||
    { echo "FAIL: .gl/ or .wgpu-whl/ missing: fetch them with bench/wgpu_carry.sh and carry them"; return 1; }
  install_missing || return 1
  install_wheels || return 1
  choose_vulkan_driver
  local rc=$?
  source "$RESULTS/vulkan.env"
  if command -v vulkaninfo >/dev/null; then vulkaninfo --summary 2>&1; fi
  return $rc
}

load_vulkan_env() {  # what setup chose, for a step run on its own
  if [ -f "$RESULTS/vulkan.env" ]; then
    source "$RESULTS/vulkan.env"
  else
    echo "no $RESULTS/vulkan.env (setup not run with these RESULTS): the loader's defaults"
  fi
  echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} WGPU_BACKEND_TYPE=${WGPU_BACKEND_TYPE:-}"
}

eval_one() {  # NAME: kforge eval of examples/candidates/wgpu/NAME.py; one line in wgpu.jsonl
  local name=$1 start rc ms
  start=$(date +%s%N)
  timeout "$EVAL_TIMEOUT" "$KFORGE" eval "examples/problems/$name.py" "examples/candidates/wgpu/$name.py" \
    --target wgpu --python "$PYTHON" --no-compile-baseline --json "$RESULTS/wgpu-$name.json" \
    >"$RESULTS/wgpu-$name.txt" 2>&1
  rc=$? ms=$(( ($(date +%s%N) - start) / 1000000 ))
  "$PYTHON" - "$RESULTS/wgpu-$name.json" "$name" "$rc" "$ms" "$(sed -n 's/^address_space_gb *= *\([0-9.]*\).*/\1/p' \
    "$KFORGE_HOME/targets/wgpu/target.toml")" <<'PY' | tee -a "$RESULTS/wgpu.jsonl"
import json, os, sys
path, name, rc, ms, address_space_gb = sys.argv[1:]
doc = json.load(open(path)) if os.path.exists(path) else {}
adapters = sorted({e.get("adapter", "") for e in (doc.get("build") or {}).get("events", []) if e.get("path") == "wgsl"})
eager = ((doc.get("timing") or {}).get("eager") or {}).get("median_ms")
cand = ((doc.get("timing") or {}).get("candidate") or {}).get("median_ms")
vs = (doc.get("speedup") or {}).get("vs_eager") or {}
print(json.dumps({"problem": name, "exit": int(rc), "command_ms": int(ms), "status": doc.get("status"),
                  "error": (doc.get("error") or {}).get("message", "")[:300],
                  "speedup_vs_eager": doc.get("speedup_vs_eager"), "ci": [vs.get("ci_low"), vs.get("ci_high")],
                  "candidate_ms": cand, "eager_ms": eager, "adapter": adapters,
                  "isolation": (doc.get("env") or {}).get("isolation"), "address_space_gb": float(address_space_gb or 0),
                  "wall_seconds": doc.get("wall_seconds")}))
PY
}

step_adapters() {
  load_vulkan_env
  PYTHONPATH=$ROOT/worker timeout 120 "$PYTHON" bench/wgpu_adapter.py helper --expect "$WGPU_EXPECT_ADAPTER" \
    --launch --json "$RESULTS/adapters.json"
  local rc=$? gb
  # The candidate runs under the target's RLIMIT_AS; GPU drivers may reserve more address space than that.
  gb=$(sed -n 's/^address_space_gb *= *\([0-9.]*\).*/\1/p' targets/wgpu/target.toml)
  if [ "$rc" = 0 ] && [ "${gb:-0}" != 0 ]; then
    echo "again under the target's RLIMIT_AS ($gb GiB):"
    if (ulimit -v "$("$PYTHON" -c "print(int($gb * 1024 * 1024))")" &&
        PYTHONPATH=$ROOT/worker timeout 120 "$PYTHON" bench/wgpu_adapter.py helper --expect "$WGPU_EXPECT_ADAPTER" \
          --launch); then
      rm -f "$RESULTS/address_space.env"
    else
      echo "FAIL: the adapter works without a limit but not under RLIMIT_AS of $gb GiB (targets/wgpu/target.toml" \
        "[sandbox] address_space_gb): the eval step runs with that limit lifted (WGPU_ADDRESS_SPACE_GB=0)"
      echo "export WGPU_ADDRESS_SPACE_GB=0" >"$RESULTS/address_space.env"
      rc=1
    fi
  fi
  [ -n "$KFORGE" ] || { echo "no kforge binary"; return 2; }
  echo "inside kforge's candidate sandbox:"
  timeout "$EVAL_TIMEOUT" "$KFORGE" eval examples/problems/01_relu.py examples/candidates/wgpu/01_relu.py \
    --target wgpu --python "$PYTHON" --no-compile-baseline --json "$RESULTS/adapters-eval.json" \
    >"$RESULTS/adapters-eval.txt" 2>&1
  echo "kforge eval exit $?: $(grep -m1 '^status:' "$RESULTS/adapters-eval.txt")"
  "$PYTHON" bench/wgpu_adapter.py evals --expect "$WGPU_EXPECT_ADAPTER" "$RESULTS/adapters-eval.json" || rc=1
  return $rc
}

# A copy of kforge's data (worker, targets, prompts) whose wgpu target has address_space_gb = $1, used as
# KFORGE_HOME: the limit is the target's to declare, not a flag of `kforge eval`.
home_with_address_space() {
  local home=/tmp/wgpu-gpu-home
  rm -rf "$home" && mkdir -p "$home" && cp -r worker targets prompts "$home/" || return 1
  sed -i "s/^address_space_gb *=.*/address_space_gb = $1  # set by bench\/wgpu_gpu_check.sh/" "$home/targets/wgpu/target.toml"
  grep '^address_space_gb' "$home/targets/wgpu/target.toml" >&2
  echo "$home"
}

step_eval() {
  load_vulkan_env
  [ -n "$KFORGE" ] || { echo "no kforge binary"; return 2; }
  [ -f "$RESULTS/address_space.env" ] && source "$RESULTS/address_space.env"
  if [ -n "${WGPU_ADDRESS_SPACE_GB:-}" ]; then
    echo "the wgpu target with address_space_gb = $WGPU_ADDRESS_SPACE_GB (WGPU_ADDRESS_SPACE_GB)"
    KFORGE_HOME=$(home_with_address_space "$WGPU_ADDRESS_SPACE_GB") || return 1
  fi
  rm -f "$RESULTS/wgpu.jsonl"
  local rc=0
  for candidate in examples/candidates/wgpu/*.py; do
    # Leaves the report its turn inside a lent machine's command limit when evaluations hang.
    if (( SECONDS + EVAL_TIMEOUT > BUDGET_S )); then
      echo "FAIL: $(basename "$candidate" .py) and the rest not evaluated: ${SECONDS} s of WGPU_CHECK_BUDGET_S=$BUDGET_S spent"
      rc=1
      break
    fi
    eval_one "$(basename "$candidate" .py)"
  done
  "$PYTHON" bench/wgpu_adapter.py evals --expect "$WGPU_EXPECT_ADAPTER" "$RESULTS"/wgpu-*.json || rc=1
  return $rc
}

step_report() {
  "$PYTHON" bench/wgpu_report.py "$RESULTS" --expect "$WGPU_EXPECT_ADAPTER"
}

echo "kforge: ${KFORGE:-none}; python: $PYTHON; results: $RESULTS"
for s in $steps; do
  case "$s" in
    setup|adapters|eval|report) run_step "$s" ;;
    *) echo "wgpu_gpu_check.sh: unknown step $s" >&2; exit 2 ;;
  esac
done
cat "$RESULTS/steps.txt"
[ -f "$RESULTS/summary.md" ] && cat "$RESULTS/summary.md"
