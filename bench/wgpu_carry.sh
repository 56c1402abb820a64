#!/usr/bin/env bash
# Fetches what bench/wgpu_gpu_check.sh installs on a GPU machine without internet, into two folders
# of the repository root that git ignores (carry them with the run):
#   .gl/         Debian 12 amd64 packages: the Vulkan loader (libvulkan1), the X client libraries
#                that NVIDIA's Vulkan driver (libGLX_nvidia.so.0) links even when headless
#                (libX11, libXext and what they need), and bubblewrap (kforge's candidate sandbox) with
#                its libraries; the check installs only what the machine lacks
#   .wgpu-whl/   wheels for CPython 3.12 on x86-64 Linux: wgpu (the version of worker/requirements.txt)
#                and its runtime dependencies (cffi, pycparser, rendercanvas); numpy comes with torch
#
#   bash bench/wgpu_carry.sh [DIR]      # DIR: where the two folders go (default: this checkout's root);
#                                       # needs apt-get and pip with internet
# Prints the folders' sizes at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=$(cd "${1:-$ROOT}" && pwd)
DEBS=(libvulkan1 libx11-6 libxext6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 bubblewrap libcap2 libselinux1 libpcre2-8-0)
# Pinned where the worker pins them; the others at the versions this wgpu was tested with.
wgpu_version=$(sed -n 's/^wgpu==\([0-9.]*\).*/\1/p' "$ROOT/worker/requirements.txt")
[ -n "$wgpu_version" ] || { echo "wgpu_carry.sh: no wgpu==VERSION in worker/requirements.txt" >&2; exit 2; }
WHEELS=("wgpu==$wgpu_version" "cffi==${CFFI_VERSION:-2.1.1}" "pycparser==${PYCPARSER_VERSION:-3.12}"
        "rendercanvas==${RENDERCANVAS_VERSION:-2.7.2}")

cd "$DEST"
rm -rf .gl .wgpu-whl
mkdir -p .gl .wgpu-whl
lists=$(mktemp -d)
trap 'rm -rf "$lists"' EXIT
mkdir -p "$lists/partial"
apt_opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
apt-get "${apt_opts[@]}" -qq update
(cd .gl && apt-get "${apt_opts[@]}" -qq download "${DEBS[@]}")

python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .wgpu-whl "${WHEELS[@]}"

ls -l .gl .wgpu-whl
du -sh .gl .wgpu-whl
