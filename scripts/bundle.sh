#!/usr/bin/env bash
# Packs a built kforge so it runs on a machine without its build dependencies (e.g. the GPU machine:
# Ubuntu 24.04, no -dev packages, no libfmt/libspdlog/libcurl of these versions):
#   dist/bin/kforge   stripped, RPATH $ORIGIN/../lib (DT_RPATH, so it also covers libcurl's own needs)
#   dist/lib/         every shared library it loads except glibc, libstdc++ and libgcc_s
#   dist/worker/ dist/targets/ dist/examples/ dist/prompts/   kforge's data (found next to bin/): the worker
#                     (kforge_worker) and the kernel libraries candidates import (kforge_kernels)
#   dist/share/chart.min.js   Chart.js for HTML reports, where this machine has libjs-chart.js
# Usage: scripts/bundle.sh [BUILD_DIR]   (default build; builds it first if needed)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
dist=dist
[ -x "$build/kforge" ] || cmake --build "$build" --target kforge

rm -rf "$dist"
mkdir -p "$dist/bin" "$dist/lib"
rpath='$ORIGIN/../lib'
if command -v patchelf >/dev/null; then
  cp "$build/kforge" "$dist/bin/kforge"
  patchelf --force-rpath --set-rpath "$rpath" "$dist/bin/kforge"
else
  # No patchelf: repeat the final link of kforge with the rpath added.
  link=$(ninja -C "$build" -t commands kforge | tail -1)
  out=$(realpath "$dist")/bin/kforge
  (cd "$build" && eval "${link/ -o kforge / -o $out -Wl,--disable-new-dtags -Wl,-rpath,'$rpath' }")
fi
strip --strip-unneeded "$dist/bin/kforge"

# Shared libraries, following what the loader resolves here (transitively, through ldd).
ldd "$dist/bin/kforge" | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
    *) cp -L "$lib" "$dist/lib/" ;;
  esac
done

# Chart.js for HTML reports (kforge reads it from $KFORGE_CHARTJS where Debian's libjs-chart.js is absent).
chartjs=/usr/share/javascript/chart.js/chart.min.js
[ -f "$chartjs" ] && mkdir -p "$dist/share" && cp "$chartjs" "$dist/share/chart.min.js"

for d in worker/kforge_worker worker/kforge_kernels targets examples prompts; do
  [ -e "$d" ] && mkdir -p "$dist/$(dirname "$d")" && cp -r "$d" "$dist/$d"
done
find "$dist" -name __pycache__ -type d -prune -exec rm -rf {} +

# The bundle must resolve every library from itself or the base system.
if LD_LIBRARY_PATH= ldd "$dist/bin/kforge" | grep -q "not found"; then
  echo "bundle.sh: unresolved libraries:" >&2
  ldd "$dist/bin/kforge" | grep "not found" >&2
  exit 1
fi
"$dist/bin/kforge" --version >/dev/null
echo "bundle.sh: $dist/ ($(du -sh "$dist" | cut -f1)): bin/kforge, $(ls "$dist/lib" | wc -l) libraries, worker, targets, examples"
