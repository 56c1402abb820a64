#!/usr/bin/env bash
# Sets up kforge on a fresh Debian/Ubuntu machine; safe to run again (each step is skipped when done).
#   1. Debian packages (apt-get), 2. Python venv .venv with the worker's packages (pip),
#   3. CMake build of build/kforge.
# Options: --no-apt (skip step 1), --python PATH (interpreter to build .venv from),
#          --build-dir DIR (default build), --no-tests (build without unit tests),
#          --no-ray (skip Ray, which only `kforge bench --executor ray` needs: worker/requirements-ray.txt),
#          --no-cute (skip the cute target's DSL, about 260 MB: worker/requirements-cute.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

apt=1; python=python3; build_dir=build; tests=ON; ray=1; cute=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-apt) apt=0 ;;
    --python) python="$2"; shift ;;
    --build-dir) build_dir="$2"; shift ;;
    --no-tests) tests=OFF ;;
    --no-ray) ray=0 ;;
    --no-cute) cute=0 ;;
    *) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
start=$(date +%s)

# --- 1. Debian packages -------------------------------------------------------------------
debs=(build-essential cmake pkg-config ninja-build
      nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libsqlite3-dev libcurl4-openssl-dev
      libcpp-httplib-dev libgtest-dev libgmock-dev libkainjow-mustache-dev libtomlplusplus-dev
      pocl-opencl-icd ocl-icd-opencl-dev bubblewrap
      mesa-vulkan-drivers libvulkan1   # wgpu target: Vulkan on the CPU (lavapipe)
      hipcc                            # hip target: AMD code objects, built compile-only (~37 MB, ~40 s)
      libjs-chart.js chromium)
if [ "$apt" = 1 ]; then
  missing=()
  for p in "${debs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    sudo_cmd=""; [ "$(id -u)" = 0 ] || sudo_cmd=sudo
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    log "Debian packages: all present"
  fi
fi

# --- 2. Python environment for the worker ---------------------------------------------------
reqs=(worker/requirements.txt)
[ "$ray" = 1 ] && reqs+=(worker/requirements-ray.txt)
[ "$cute" = 1 ] && reqs+=(worker/requirements-cute.txt)
if [ ! -x .venv/bin/python ]; then
  log "creating .venv from $python"
  "$python" -m venv .venv
fi
stamp=.venv/.kforge-requirements.sha256
want=$(cat "${reqs[@]}" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing Python packages from ${reqs[*]} (PyTorch is large: a few minutes on a fresh machine)"
  .venv/bin/python -m pip install -q --disable-pip-version-check "${reqs[@]/#/-r}"
  echo "$want" > "$stamp"
else
  log "Python packages: up to date"
fi

# --- 3. Build -----------------------------------------------------------------------------------
log "building $build_dir/kforge"
cmake -S . -B "$build_dir" -G Ninja -DKFORGE_BUILD_TESTS=$tests -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
log "done in $(( $(date +%s) - start )) s: $build_dir/kforge"
