"""One ``nvcc -c`` compile with its host and device passes side by side.

    python nvcc_lanes.py NVCC ARGS...      (what load_inline's build runs as its nvcc: PYTORCH_NVCC)

nvcc runs its passes one after another: preprocessing, cudafe++ (the host side), cicc, ptxas and
fatbinary (the device side), then the host compiler. For a load_inline source most of that time is
torch's headers parsed by cudafe++ and by cicc (11.5 and 8.4 s of a 34 s compile on an H200 machine's
CPU, bench/results/20261128-h200-digest-builds), and neither needs the other's output: cicc reads only
the module id file cudafe++ writes first, an identifier of the translation unit that both use to name
what it declares in anonymous namespaces. So this script asks nvcc for its commands (``--dryrun``),
writes the module id itself, runs cudafe++ (told to read that id rather than make one) beside the
device passes, and then the host compile, which needs the outputs of both. Run with the id nvcc
would have made, the object is byte for byte nvcc's (worker/tests/test_nvcc_lanes.py); with this
script's id, it differs from nvcc's only in that name. Where the commands are not the ones expected
(another nvcc, other modes or flags), nvcc runs the compile itself, as it was asked. Where kforge's
builder keeps a precompiled header of cudafe++'s output of load_inline's leading includes for this
command (build_pch, cuda_prefix), the compile uses that header's module id, and the host compile
reads the header instead of those lines when they are exactly its own.

Standard library only: it runs inside the builder's sandbox as a script, with the interpreter that
runs load_inline.
"""

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

try:
    from kforge_worker.builder import build_pch
except ImportError:  # run as a script: its folder is on the path
    import build_pch

# A shell variable nvcc sets for its passes (``#$ _NVVM_BRANCH_=nvvm``, ``#$ PATH=...``).
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DEPENDENCIES = re.compile(r"^-- Filter Dependencies -- > (.+)$")
_LINE_MARKER = re.compile(r'^# \d+ "((?:[^"\\]|\\.)*)"')
_NOT_FILES = ("<built-in>", "<command-line>")
_FIRST_WORD = re.compile(r'^(?:"[^"]*"|\S)+')  # a shell command's program, quoted or not


@dataclass
class Plan:
    """nvcc's passes for one compile, split into what may run at once."""

    environment: list  # the variable assignments nvcc runs its passes with
    host: list  # (index in nvcc's order, command): host preprocessing, then cudafe++
    device: list  # (index, command): device preprocessing, cicc, ptxas, fatbinary
    final: tuple  # (index, command): the host compile of cudafe++'s output with the device code
    module_id_file: str
    host_source: str  # cudafe++'s output, which the host compile reads
    stub_name: str  # the stub file cudafe++ writes beside it (as its output names it)
    depfile: str = None  # -MD's file, which nvcc writes itself (no command for it)
    depfile_target: str = ""
    preprocessed: list = field(default_factory=list)  # the .ii files whose line markers name the dependencies


def dry_run(nvcc: str, args: list, work_dir: str) -> list:
    """nvcc's commands for ``args`` with every intermediate file in ``work_dir``, without running them."""
    r = subprocess.run([nvcc, *args, "--keep", "--keep-dir", work_dir, "--dryrun"], capture_output=True, text=True)
    if r.returncode != 0:
        return []
    return [line[3:] for line in r.stderr.splitlines() if line.startswith("#$ ")]


_HOST_COMPILERS = ("gcc", "g++", "c++", "cc")
_DEVICE_TOOLS = ("cicc", "ptxas", "fatbinary")


def _tool(words: list) -> str:
    """The program a command's words run (cicc as nvcc names it, through $CICC_PATH)."""
    return os.path.basename(words[0].replace("$CICC_PATH/", "")) if words else ""


def plan(lines: list, output: str):
    """The Plan of nvcc's dry-run ``lines`` for a compile to ``output``, or None where they are not
    the passes this script knows how to run side by side (ValueError where shlex cannot split one)."""
    environment = [line for line in lines if _ASSIGNMENT.match(line)]
    depfile = None
    passes = []  # (index in nvcc's order, command, its words, its program)
    for index, command in enumerate(line for line in lines if not _ASSIGNMENT.match(line)):
        filtered = _DEPENDENCIES.match(command)
        if filtered:
            depfile = filtered.group(1).strip()
        else:
            words = shlex.split(command)
            passes.append((index, command, words, _tool(words)))
    cudafe = [p for p in passes if p[3] == "cudafe++"]
    if len(cudafe) != 1:
        return None
    cudafe_index, cudafe_command, words, _ = cudafe[0]
    module_id_file = build_pch.option_value(words, "--module_id_file_name")
    host_source = build_pch.option_value(words, "--gen_c_file_name")
    stub_name = build_pch.option_value(words, "--stub_file_name")
    if "--gen_module_id_file" not in words or not module_id_file or not host_source or not stub_name:
        return None
    cudafe_input = words[-1]
    final_index, final_command, _, final_tool = passes[-1]
    if final_tool not in _HOST_COMPILERS or host_source not in final_command or output not in final_command:
        return None
    host, device, preprocessed = [], [], []
    for index, command, words, tool in passes[:-1]:
        preprocessing = tool in _HOST_COMPILERS and "-E" in words
        if index == cudafe_index:
            host.append((index, command.replace("--gen_module_id_file ", "", 1)))
        elif preprocessing and "-D__CUDA_ARCH__=" not in command:
            if cudafe_input not in command:
                return None  # host preprocessing that does not feed cudafe++
            host.append((index, command))
        elif cudafe_input in command or not (preprocessing or tool in _DEVICE_TOOLS):
            return None  # a pass it does not know, or a device pass reading the host side's files
        elif tool == "cicc" and build_pch.option_value(words, "--module_id_file_name") != module_id_file:
            return None
        else:
            device.append((index, command))
            if preprocessing:
                preprocessed.append(words[-1])
    if not device or host[-1][0] != cudafe_index:
        return None
    return Plan(environment, host, device, (final_index, final_command), module_id_file, host_source, stub_name,
                depfile, output, preprocessed + [cudafe_input])


def module_id(source: str) -> str:
    """An identifier of the translation unit in nvcc's shape (_HASH_LENGTH_NAME): the hash of the
    source's bytes and of its path, so that two compiles in one program get different ones."""
    with open(source, "rb") as f:
        digest = hashlib.sha256(f.read() + os.path.abspath(source).encode()).hexdigest()[:8]
    name = re.sub(r"\W", "_", os.path.basename(source))
    return f"_{digest}_{len(name)}_{name}"


def dependencies(target: str, source: str, preprocessed: list) -> str:
    """-MD's file as nvcc writes it: the files the device and then the host preprocessing read,
    each once, in the order they were first read."""
    seen = {source: None, **{name: None for name in _NOT_FILES}}
    files = []
    for path in preprocessed:
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("# "):
                    marker = _LINE_MARKER.match(line)
                    if marker and marker.group(1) not in seen:
                        seen[marker.group(1)] = None
                        files.append(marker.group(1))
    return " \\\n    ".join([f"{target} : {source}", *files]) + "\n"


def environment(assignments: list) -> dict:
    """The environment nvcc gives its passes: this process's with nvcc's variables (PATH, CICC_PATH,
    LD_LIBRARY_PATH, ...) set as its dry run prints them (a value of one quoted word unquoted)."""
    env = dict(os.environ)
    for line in assignments:
        name, value = line.split("=", 1)
        try:
            words = shlex.split(value)
        except ValueError:
            words = []
        env[name] = words[0] if len(words) == 1 else value.strip()
    return env


def run_lane(env: dict, lane: list):
    """Runs a lane's commands in turn: (None, outputs) or ((the failed command's index, its exit
    status), outputs), with ``outputs`` each command's (index, stdout and stderr)."""
    outputs = []
    for index, command in lane:
        r = subprocess.run(["/bin/sh", "-c", command], env=env, capture_output=True, text=True)
        outputs.append((index, r.stdout + r.stderr))
        if r.returncode != 0:
            return (index, r.returncode), outputs
    return None, outputs


def _with_prefix_header(p: Plan, folder: str):
    """The host compile with the precompiled header lines of ``folder`` (build_pch, cuda_prefix)
    in front and cudafe++'s output cut to what follows them, or as it was where its first lines are
    not exactly those."""
    with open(os.path.join(folder, build_pch.PREFIX_HEADER), "rb") as f:
        prefix = f.read()
    with open(p.host_source, "rb") as f:
        rest = build_pch.split_prefix(f.read(), prefix)
    if rest is None:
        return p.final
    with open(p.host_source, "wb") as f:
        f.write(rest)
    index, command = p.final
    compiler = _FIRST_WORD.match(command).group(0)
    header = shlex.quote(os.path.join(folder, build_pch.PREFIX_HEADER))
    return index, f"{compiler} -include {header}{command[len(compiler):]}"


def run(p: Plan, module: str, source: str, prefix_folder: str = None) -> int:
    """Runs the plan with ``module`` as the module id: nvcc's exit status and its output as nvcc
    would show it (each pass's in nvcc's order; where passes fail, up to the first in that order).
    With ``prefix_folder`` the host compile starts from that precompiled header where it fits."""
    with open(p.module_id_file, "w") as f:
        f.write(module)
    env = environment(p.environment)
    with ThreadPoolExecutor(2) as pool:
        lanes = [pool.submit(run_lane, env, lane) for lane in (p.host, p.device)]
        results = [lane.result() for lane in lanes]
    failures = [failed for failed, _ in results if failed]
    failed = min(failures) if failures else None
    if failed is None:
        final_pass = _with_prefix_header(p, prefix_folder) if prefix_folder else p.final
        final, output = run_lane(env, [final_pass])
        results.append((final, output))
        failed = final
    shown = sorted(o for _, outputs in results for o in outputs if failed is None or o[0] <= failed[0])
    sys.stderr.write("".join(text for _, text in shown))
    sys.stderr.flush()
    if failed is not None:
        return failed[1]
    if p.depfile:
        with open(p.depfile, "w") as f:
            f.write(dependencies(p.depfile_target, source, p.preprocessed))
    return 0


# Relocatable device code: compiles whose module ids meet at link time, left to nvcc.
_WHOLE_PROGRAM_ONLY = re.compile(r"^(-rdc|--relocatable-device-code|-dc|--device-c|-dw|--device-w)\b")


def _prefix_header(nvcc: str, args: list):
    """The folder of kforge's precompiled header for this compile's host side (build_pch), or None
    (after asking kforge's builder for one)."""
    found = build_pch.normalized([nvcc, *args], (".cu",))
    if found is None or not build_pch.root():
        return None
    folder = build_pch.lookup(build_pch.CUDA_PREFIX, found[0])
    build_pch.note(build_pch.CUDA_PREFIX, found[0], folder is not None)
    return folder


def compile_source(nvcc: str, args: list) -> int:
    """Compiles as ``nvcc ARGS`` would, in two lanes where the passes allow it."""
    output = build_pch.option_value(args, "-o")
    sources = [a for a in args if a.endswith(".cu") and os.path.isfile(a)]
    splittable = ("-c" in args and output and len(sources) == 1
                  and not any(_WHOLE_PROGRAM_ONLY.match(a) for a in args))
    work_dir = tempfile.mkdtemp(prefix="kforge-nvcc-")
    try:
        try:
            p = plan(dry_run(nvcc, args, work_dir), output) if splittable else None
        except ValueError:
            p = None
        if p is None:
            return subprocess.run([nvcc, *args]).returncode
        folder = _prefix_header(nvcc, args)
        module = build_pch.module_id(folder) if folder else None
        if module is None:  # no header: the source's own id
            return run(p, module_id(sources[0]), sources[0])
        return run(p, module, sources[0], folder)  # the id cudafe++ wrote into the header's lines
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: nvcc_lanes.py NVCC ARGS...")
    sys.exit(compile_source(sys.argv[1], sys.argv[2:]))
