"""Makes one precompiled header of build_pch for a compile command, inside a sandbox of kforge's builder.

    python pch_produce.py torch_extension OUT COMMAND_JSON
    python pch_produce.py cuda_prefix OUT COMMAND_JSON MODULE_ID

OUT is a new folder; COMMAND_JSON the compile's words as build_pch.normalized gives them. The
sources are this script's own: torch_extension.h (``#include <torch/extension.h>``) compiled as a
header with the command's flags (and its -MD dependency file); for cuda_prefix, a CUDA source of
load_inline's three includes run through nvcc's host passes with MODULE_ID (nvcc_lanes' plan), the
header lines of cudafe++'s output kept as prefix.h, and that compiled as a header with the flags
of nvcc's host compile. Standard library only: a script in the sandbox.
"""

import json
import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_pch  # noqa: E402
import nvcc_lanes  # noqa: E402


def _compile_header(words: list, header: str, extra: list = (), env: dict = None) -> None:
    r = subprocess.run([*words, "-x", "c++-header", header, "-o", header + ".gch", *extra], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"the header did not compile (exit {r.returncode}): {(r.stdout + r.stderr)[-2000:]}")


def torch_extension(out: str, words: list) -> None:
    header = os.path.join(out, build_pch.TORCH_EXTENSION_HEADER)
    with open(header, "w") as f:
        f.write(build_pch.TORCH_EXTENSION_LINE + "\n")
    _compile_header(words, header, ["-MD", "-MF", os.path.join(out, "deps.d")])


def _header_compile_words(final: str, host_source: str) -> list:
    """nvcc's host compile (one shell command) as the words that compile a header instead: without
    its source, its output and the ``-c -x c++`` that name them."""
    words, kept = shlex.split(final), []
    i = 0
    while i < len(words):
        if words[i] in ("-o", "-x"):
            i += 2
            continue
        if words[i] != "-c" and words[i] != host_source:
            kept.append(words[i])
        i += 1
    return kept


def cuda_prefix(out: str, words: list, module: str) -> None:
    source = os.path.join(out, "cuda.cu")
    with open(source, "w") as f:
        f.write(build_pch.CUDA_SOURCE_START)
    keep = os.path.join(out, "keep")
    os.mkdir(keep)
    obj = os.path.join(out, "cuda.o")
    p = nvcc_lanes.plan(nvcc_lanes.dry_run(words[0], [*words[1:], "-c", source, "-o", obj], keep), obj)
    if p is None:
        sys.exit("nvcc's passes for this command are not the ones kforge runs side by side")
    with open(p.module_id_file, "w") as f:
        f.write(module)
    env = nvcc_lanes.environment(p.environment)
    failed, outputs = nvcc_lanes.run_lane(env, p.host)
    if failed:
        sys.exit("nvcc's host passes failed: " + "".join(text for _, text in outputs)[-2000:])
    with open(p.host_source, "rb") as f:
        prefix = build_pch.prefix_of(f.read(), p.stub_name)
    if prefix is None:
        sys.exit("cudafe++'s output does not have the expected shape")
    header = os.path.join(out, build_pch.PREFIX_HEADER)
    with open(header, "wb") as f:
        f.write(prefix)
    _compile_header(_header_compile_words(p.final[1], p.host_source), header, env=env)


def main(argv: list) -> None:
    kind, out, command = argv[0], argv[1], json.loads(argv[2])
    os.mkdir(out)
    if kind == build_pch.TORCH_EXTENSION:
        torch_extension(out, command)
    elif kind == build_pch.CUDA_PREFIX:
        cuda_prefix(out, command, argv[3])
    else:
        sys.exit(f"unknown kind {kind}")


if __name__ == "__main__":
    main(sys.argv[1:])
