#!/usr/bin/env bash
# Runs every test: C++ unit tests (ctest), worker unit tests and end-to-end CLI tests (pytest).
# Expects scripts/setup.sh to have run. One compile cache (build/test-cache) serves the whole run.
set -uo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
export KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-$PWD/$build_dir/test-cache}
export KFORGE_BIN=$PWD/$build_dir/kforge
status=0
start=$(date +%s)

echo "== C++ unit tests (ctest)"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" || status=1

# Speed-of-light checks compare against this machine's peaks, measured once and cached: measure them
# now, on an idle machine, rather than inside the parallel tests that load it.
echo "== this machine's peaks (speed of light), measured once"
PYTHONPATH=worker .venv/bin/python -m kforge_worker peaks --device cpu --cache "$KFORGE_CACHE_DIR/peaks" \
  --threads "$(nproc)" || status=1

echo "== Python: worker unit tests and end-to-end tests (pytest)"
# --dist loadgroup: the tests of one xdist_group (the Ray cluster's) share a worker.
.venv/bin/python -m pytest -q -rs -n "$jobs" --dist loadgroup -p no:cacheprovider --durations=15 \
  worker/tests tests bench || status=1

echo "== all tests finished in $(( $(date +%s) - start )) s, status $status"
exit $status
