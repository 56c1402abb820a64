#!/usr/bin/env bash
# Makes the Python environment kforge's evaluation workers run in, for an installed kforge (the
# .deb, or `cmake --install`): a venv with the worker's packages, PyTorch among them. A build tree
# has its own (.venv, made by scripts/setup.sh). Installed as <prefix>/share/kforge/setup-worker.sh.
#
# Default location: ${XDG_DATA_HOME:-~/.local/share}/kforge/venv, where kforge looks for it.
# Options:
#   --python PATH    interpreter to make the venv from (default python3; 3.10 or newer)
#   --venv DIR       another location (then set worker.python in kforge.toml to DIR/bin/python)
#   --layer-on VENV  see the packages of an existing environment of the same Python version from
#                    the new one (a .pth file), so pip installs only what that one lacks
#   -- ARGS          passed to pip install (e.g. --index-url https://download.pytorch.org/whl/cpu)
# Safe to run again: a venv whose packages match requirements.txt is left as it is.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
req=$here/worker/requirements.txt
python=python3
data_home=${XDG_DATA_HOME:-}
case "$data_home" in /*) ;; *) data_home=$HOME/.local/share ;; esac  # relative values are ignored (XDG)
venv=$data_home/kforge/venv
layer=""
pip_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python="$2"; shift ;;
    --venv) venv="$2"; shift ;;
    --layer-on) layer="$2"; shift ;;
    --) shift; pip_args=("$@"); break ;;
    *) echo "setup-worker.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
  shift
done
log() { printf '[setup-worker] %s\n' "$*"; }
[ -f "$req" ] || { echo "setup-worker.sh: $req not found (run the installed copy)" >&2; exit 2; }

if [ ! -x "$venv/bin/python" ]; then
  log "creating $venv from $python"
  if ! "$python" -m venv "$venv"; then
    echo "setup-worker.sh: '$python -m venv' failed; on Debian/Ubuntu: sudo apt-get install python3-venv" >&2
    exit 1
  fi
fi
if [ -n "$layer" ]; then
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  other=$("$layer/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mine_v=$("$venv/bin/python" -c 'import sys; print(sys.version_info[:2])')
  other_v=$("$layer/bin/python" -c 'import sys; print(sys.version_info[:2])')
  if [ "$mine_v" != "$other_v" ]; then
    echo "setup-worker.sh: --layer-on $layer is Python $other_v, this venv $mine_v" >&2
    exit 2
  fi
  log "layering on the packages of $layer ($other)"
  echo "$other" > "$site/kforge-layer.pth"
fi
stamp=$venv/.kforge-requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing the worker's packages from $req (PyTorch is large: a few minutes)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" "${pip_args[@]}"
  echo "$want" > "$stamp"
else
  log "packages: up to date"
fi
torch=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
log "done: $venv/bin/python with torch $torch"
