#!/usr/bin/env bash
# Where a load_inline build's time goes: builds a candidate with plain load_inline (wall time), then,
# at once, nvcc --time of its cuda.cu as written and with <torch/extension.h> resolved to
# <torch/types.h> (as kforge's builder tries first), and main.cpp without and with a precompiled
# header of torch/extension.h.
#   bash bench/inline_build_stages.sh OUT_DIR [CANDIDATE]   (default: the real-size 19_ReLU)
# Prints each pass's milliseconds; OUT_DIR keeps nvcc's CSV files.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/gpu_env.sh"
out=${1:?usage: inline_build_stages.sh OUT_DIR [CANDIDATE]}
candidate=${2:-$ROOT/bench/realsize/candidates/19_ReLU.py}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/pch" "$work/light/torch"
: >"$out/main.txt"
# The plain build as bench/inline_build.py makes it (the architectures kforge's builder uses).
"$PYTHON" - "$ROOT/bench" "$candidate" "$work" <<'PY' | tee "$out/plain.txt"
import sys
sys.path.insert(0, sys.argv[1])
from inline_build import captured_params, gpu_env, plain_build
gpu_env.apply()
print(f"plain load_inline {plain_build(captured_params(sys.argv[2]), sys.argv[3])[1]:.1f} s")
PY
cp "$ROOT/worker/kforge_worker/cuda_headers/torch/extension.h" "$work/light/torch/"
printf '#include <torch/extension.h>\n' > "$work/pch/torch_extension.h"
cd "$work/plain"
field() { grep "^$1 = " build.ninja | sed "s/^$1 = //"; }
nvcc=$(field nvcc); cuda_flags=$(field cuda_cflags); cxx=$(field cxx); flags=$(field cflags)
pch_flags=$(echo "$flags" | sed 's/-DTORCH_EXTENSION_NAME=[^ ]* //')
( eval "$nvcc $cuda_flags --time $out/nvcc-as-written.csv -c cuda.cu -o $work/a.o" ) &
( eval "$nvcc -I$work/light $cuda_flags --time $out/nvcc-types-h.csv -c cuda.cu -o $work/b.o" ) &
( /usr/bin/time -f "main.cpp %e s" $cxx $flags -c main.cpp -o "$work/m1.o" ) 2>>"$out/main.txt" &
( /usr/bin/time -f "precompiled header %e s" $cxx $pch_flags -x c++-header "$work/pch/torch_extension.h" -o "$work/pch/torch_extension.h.gch" &&
  /usr/bin/time -f "main.cpp with the precompiled header %e s" $cxx -Winvalid-pch -include "$work/pch/torch_extension.h" $flags -c main.cpp -o "$work/m2.o" ) 2>>"$out/main.txt" &
wait
cat "$out/main.txt"
for f in "$out"/nvcc-*.csv; do echo "$(basename "$f" .csv):"; cut -d, -f2,7 "$f" | tail -n +2; done
