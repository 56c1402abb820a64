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
mkdir -p "$out" "$work/plain" "$work/pch" "$work/light/torch"
: >"$out/main.txt"
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-$("$PYTHON" -c "import torch; print('%d.%d' % torch.cuda.get_device_capability())" 2>/dev/null || echo 9.0)}
"$PYTHON" - "$candidate" "$work/plain" <<'PY' | tee "$out/plain.txt"
import importlib.util, sys, time
from torch.utils import cpp_extension
original = cpp_extension.load_inline
def timed(*args, **kwargs):
    kwargs.update(build_directory=sys.argv[2], verbose=False)
    start = time.perf_counter()
    try:
        return original(*args, **kwargs)
    finally:
        print(f"plain load_inline {time.perf_counter() - start:.1f} s", flush=True)
cpp_extension.load_inline = timed
spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
spec.loader.exec_module(importlib.util.module_from_spec(spec))
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
