"""What a load_inline CUDA source parses, and what dropping the operator declarations it cannot use
would buy: the source's cuda.cu as kforge's builder first compiles it (against torch/types.h) is
preprocessed and its bytes split between ATen's per-operator headers (ATen/ops/) and the rest; then
nvcc --time builds it twice, one after the other: as is, and with ATen/Functions.h,
NativeFunctions.h and Operators.h cut to the operators whose names appear in the source or in the
code of the other headers it includes (comments and strings left out), which is as far as such a
cut can go without changing what a name in the source means.
    python bench/inline_header_weight.py [CANDIDATE]   (default: the real-size 19_ReLU)
Needs nvcc and torch's headers, no GPU. Prints one JSON line."""

import argparse
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from torch.utils import cpp_extension

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from inline_build import captured_params  # noqa: E402  (it puts the worker on sys.path)
from kforge_worker.cuda_header_choice import HEADERS as LIGHT_HEADERS  # noqa: E402
OPERATOR_LISTS = ("Functions.h", "NativeFunctions.h", "Operators.h")
OPERATOR_INCLUDE = re.compile(r"#include <ATen/ops/(\w+?)(?:_native|_ops)?\.h>")
NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"', re.S)


def preprocessor_flags() -> list:
    """Defines and include folders as load_inline passes them, kforge's torch/extension.h first."""
    includes = cpp_extension.include_paths(device_type="cuda") + [sysconfig.get_paths()["include"]]
    return ([f"-I{LIGHT_HEADERS}", "-DTORCH_EXTENSION_NAME=weight", "-DTORCH_API_INCLUDE_EXTENSION_H"]
            + [a for p in includes for a in ("-isystem", p)]
            + [f for f in cpp_extension.COMMON_NVCC_FLAGS if f.startswith("-D")])


def nvcc_flags(arch: str) -> list:
    return ([f for f in cpp_extension.COMMON_NVCC_FLAGS if not f.startswith("-D")]
            + [f"-gencode=arch=compute_{arch},code=sm_{arch}", "--compiler-options", "-fPIC", "-O3", "-std=c++17"])


def gcc(cu: Path, pre: list, *mode: str) -> str:
    return subprocess.run(["g++", "-std=c++17", "-x", "c++", *mode, str(cu)] + pre,
                          capture_output=True, text=True, check=True).stdout


def header_files(cu: Path, pre: list) -> list:
    return [f for f in gcc(cu, pre, "-M").replace("\\\n", " ").split()[1:] if f.endswith(".h")]


def preprocessed_bytes(cu: Path, pre: list) -> dict:
    sizes, current = {"ATen/ops": 0, "other": 0}, ""
    for line in gcc(cu, pre, "-E").splitlines(keepends=True):
        if line.startswith("# "):
            current = line
            continue
        sizes["ATen/ops" if "/ATen/ops/" in current else "other"] += len(line)
    return sizes


def pruned_headers(cu: Path, pre: list, source: str, out: Path) -> dict:
    """A folder with the three operator lists cut to the operators named in code; the counts."""
    files = header_files(cu, pre)
    aten = next(Path(f).parent for f in files if f.endswith("/ATen/Functions.h"))
    names = set(re.findall(r"[A-Za-z_]\w*", NOT_CODE.sub("", source)))
    for f in files:
        if "/ATen/ops/" in f:
            continue
        text = Path(f).read_text(errors="replace")
        if Path(f).name in OPERATOR_LISTS:
            text = OPERATOR_INCLUDE.sub("", text)
        names |= set(re.findall(r"[A-Za-z_]\w*", NOT_CODE.sub("", text)))
    (out / "ATen").mkdir(parents=True)
    listed = set()
    for name in OPERATOR_LISTS:
        text = (aten / name).read_text()
        listed = listed | set(OPERATOR_INCLUDE.findall(text))
        lines = [l for l in text.splitlines() if not ((m := OPERATOR_INCLUDE.match(l)) and m.group(1) not in names)]
        (out / "ATen" / name).write_text("\n".join(lines) + "\n")
    kept = {op for op in listed if op in names}
    return {"operators": len(listed), "kept": len(kept)}


def nvcc_time(cu: Path, extra: list, work: Path, tag: str) -> dict:
    csv = work / f"{tag}.csv"
    start = time.perf_counter()
    subprocess.run([os.path.join(cpp_extension.CUDA_HOME or "/usr/local/cuda", "bin", "nvcc")] + extra
                   + ["--time", str(csv), "-c", str(cu), "-o", str(work / f"{tag}.o")], check=True)
    wall = time.perf_counter() - start
    passes = {}
    for row in csv.read_text().splitlines()[1:]:
        cells = [c.strip() for c in row.split(",")]
        if len(cells) > 6 and cells[1]:
            passes[cells[1]] = round(float(cells[6]) / 1000, 2)
    return {"seconds": round(wall, 2), "passes_s": passes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("candidate", nargs="?", default=str(ROOT / "bench" / "realsize" / "candidates" / "19_ReLU.py"))
    ap.add_argument("--arch", default=os.environ.get("KFORGE_CUDA_ARCH", "90"))
    args = ap.parse_args()
    params = captured_params(args.candidate)
    sources = params["cuda_sources"]
    source = "\n".join(sources) if isinstance(sources, list) else sources
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cu = work / "cuda.cu"
        cu.write_text("#include <torch/types.h>\n" + source)  # load_inline puts it first, as here
        pre = preprocessor_flags()
        cut = [f"-I{work / 'pruned'}"] + pre
        result = {"candidate": Path(args.candidate).name, "preprocessed_bytes": preprocessed_bytes(cu, pre)}
        result["pruned"] = pruned_headers(cu, pre, source, work / "pruned")
        result["pruned"]["preprocessed_bytes"] = preprocessed_bytes(cu, cut)
        result["nvcc_types_h"] = nvcc_time(cu, pre + nvcc_flags(args.arch), work, "types_h")
        result["nvcc_pruned"] = nvcc_time(cu, cut + nvcc_flags(args.arch), work, "pruned")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
