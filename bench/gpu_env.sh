# Sourced by the GPU scripts of bench/ (with ROOT set to the repository root): finds what they run.
#   PYTHON  the worker's interpreter: $PYTHON, else the GPU machines' /opt/torch/.venv, else python3
#   KFORGE  $KFORGE_BIN, else a carried bundle (dist/bin/kforge), else build/kforge; empty if none
#   PATH    gains the CUDA toolkit's and Nsight Compute's folders where they exist
PYTHON=${PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PYTHON" ] || PYTHON=$(command -v python3)
KFORGE=${KFORGE_BIN:-}
for c in "$ROOT/dist/bin/kforge" "$ROOT/build/kforge"; do
  [ -z "$KFORGE" ] && [ -x "$c" ] && KFORGE=$c
done
for d in /usr/local/cuda/bin /opt/nvidia/nsight-compute/*/; do
  [ -d "$d" ] && PATH=$PATH:${d%/}
done
export PATH
