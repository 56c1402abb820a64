# Sourced by bench/turnaround.sh and bench/loop_turnaround.sh (from the repository root): what they
# run and on which target.
#   kforge  $KFORGE_BIN, else a carried bundle (dist/bin/kforge), else build/kforge
#   py      $PYTHON, else .venv/bin/python, else the GPU machines' /opt/torch/.venv, else python3
#   target  $TARGET, else cuda when that interpreter's torch sees a GPU, else cpu
kforge=${KFORGE_BIN:-}
for c in dist/bin/kforge build/kforge; do [ -z "$kforge" ] && [ -x "$c" ] && kforge=$PWD/$c; done
[ -n "$kforge" ] || { echo "no kforge binary: run scripts/setup.sh (or carry a bundle in dist/)" >&2; exit 2; }
py=${PYTHON:-}
for c in "$PWD/.venv/bin/python" /opt/torch/.venv/bin/python3; do [ -z "$py" ] && [ -x "$c" ] && py=$c; done
py=${py:-$(command -v python3)}
target=${TARGET:-$("$py" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')}
case $target in cpu | cuda) ;; *) echo "TARGET must be cpu or cuda, not '$target'" >&2; exit 2 ;; esac
