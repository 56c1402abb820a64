"""Precompiled headers for load_inline builds: the torch headers every such build parses, parsed once.

A load_inline build compiles two files, and torch's headers are most of both (bench/results/
20261128-h200-digest-builds): main.cpp (the bindings load_inline generates) starts with
``#include <torch/extension.h>``, and nvcc's host compiler reads cudafe++'s output of cuda.cu, which
starts with the declarations of the ``torch/types.h``, ``cuda.h`` and ``cuda_runtime.h`` that
load_inline puts first in every CUDA source. GCC can load such a prefix from a precompiled header
(``-include FILE`` finds ``FILE.gch`` beside it); the object it makes is byte for byte the same
(worker/tests/test_build_pch.py). Two kinds, each kept per exact compile command:

* ``torch_extension``: main.cpp's compile with ``-include DIR/torch_extension.h`` (a header that
  includes torch/extension.h), used while every header it read is as it was (sizes and times).
* ``cuda_prefix``: the host compile of cudafe++'s output, whose first lines must equal, byte for
  byte, that of a source holding only load_inline's three includes (``prefix.h``); only the rest is
  compiled, after ``-include DIR/prefix.h``. cudafe++ writes the module id into those lines, so the
  compile uses the one the header was made with (``module_id``): a library has one nvcc translation
  unit, and the id only names its hidden symbols.

Inside the builder's sandbox the compilers' wrappers (host_cxx.py, nvcc_lanes.py) look headers up
in $KFORGE_PCH_DIR (read-only there) and note in $KFORGE_PCH_NOTES whether one fitted the command.
After the build kforge's builder makes the noted headers, each in a sandbox of its own, from its
own source text and only for commands whose every flag is on a list that cannot run anything
(``unsafe``): a note names a command, nothing more, so a compromised compile can at most have a
header made for flags someone asked for. The headers are then installed as the libraries are.

Standard library only: the wrappers run this inside the sandbox with the build's interpreter.
"""

import hashlib
import json
import os
import re
import shutil

VERSION = "1"
TORCH_EXTENSION = "torch_extension"
CUDA_PREFIX = "cuda_prefix"
KINDS = (TORCH_EXTENSION, CUDA_PREFIX)

TORCH_EXTENSION_LINE = "#include <torch/extension.h>"
TORCH_EXTENSION_HEADER = "torch_extension.h"
PREFIX_HEADER = "prefix.h"
# What load_inline puts first in every CUDA source (torch.utils.cpp_extension.load_inline).
CUDA_SOURCE_START = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"

# Options that take the next word as their value (the normalised command keeps both).
_WITH_VALUE = {
    "-isystem", "-I", "-D", "-U", "-MF", "-MT", "-MQ", "-o", "-x", "-include", "-imacros", "-iquote",
    "-idirafter", "--compiler-options", "-Xcompiler", "-Xptxas", "-Xlinker", "-Xcudafe", "-ccbin",
    "--compiler-bindir", "-gencode", "-arch", "-code", "--generate-code", "--gpu-architecture",
    "--gpu-code", "-isysroot", "--sysroot", "-B", "-L", "-l", "--keep-dir", "-odir",
}
# Words of a compile that name its own files: not part of what a header is made for.
_OWN_FILES = {"-MF", "-MT", "-MQ", "-o"}
_OWN_FLAGS = {"-MD", "-MMD", "-c"}
_EXTENSION_NAME = "-DTORCH_EXTENSION_NAME="

_MODULE_ID = re.compile(r"^_[0-9a-f]{8}_[0-9]+_[A-Za-z0-9_]+$")


def normalized(argv: list, suffixes: tuple):
    """(the command without its own files, its source) for a compile of one source ending in one of
    ``suffixes``, or None: the words that decide what the compiler makes of the headers."""
    words, sources = [argv[0]], []
    i = 1
    while i < len(argv):
        word = argv[i]
        if word in _OWN_FILES:
            i += 2
            continue
        if word in _OWN_FLAGS or word.startswith(_EXTENSION_NAME):  # the name: no header uses it
            i += 1
            continue
        if word in _WITH_VALUE:
            words += argv[i:i + 2]
            i += 2
            continue
        if not word.startswith("-") and word.endswith(suffixes):
            sources.append(word)
        else:
            words.append(word)
        i += 1
    if "-c" not in argv or len(sources) != 1:
        return None
    return words, sources[0]


def _stamp(program: str):
    path = shutil.which(program) if program else None
    if not path:
        return [program, None]
    st = os.stat(os.path.realpath(path))
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns]


def key(kind: str, words: list) -> str:
    """The header's name: its kind, the command's words and the compilers that run them."""
    tools = [_stamp(words[0])]
    if kind == CUDA_PREFIX:  # nvcc's own passes and its host compiler
        nvcc_dir = os.path.dirname(os.path.realpath(shutil.which(words[0]) or words[0]))
        host = option_value(words, "-ccbin") or option_value(words, "--compiler-bindir")
        tools.append(_stamp(os.path.join(nvcc_dir, "cudafe++")))
        tools += [_stamp(host)] if host else [_stamp("gcc"), _stamp("g++")]
    data = json.dumps([VERSION, kind, words, tools])
    return hashlib.sha256(data.encode()).hexdigest()[:24]


def option_value(words: list, name: str):
    """The value after option ``name`` in a command's words, or None."""
    return next((words[i + 1] for i, w in enumerate(words[:-1]) if w == name), None)


def root():
    return os.environ.get("KFORGE_PCH_DIR") or None


def lookup(kind: str, words: list):
    """The folder of the header made for this command, or None (no folder, or headers it read
    since changed)."""
    base = root()
    if not base:
        return None
    folder = os.path.join(base, key(kind, words))
    try:
        with open(os.path.join(folder, "deps.json")) as f:
            deps = json.load(f)
        for path, size, mtime_ns in deps:
            st = os.stat(path)
            if st.st_size != size or st.st_mtime_ns != mtime_ns:
                return None
    except (OSError, ValueError, TypeError):
        return None
    return folder


def module_id(folder: str):
    try:
        with open(os.path.join(folder, "module_id")) as f:
            value = f.read().strip()
    except OSError:
        return None
    return value if _MODULE_ID.match(value) else None


def note(kind: str, words: list, found: bool) -> None:
    """Tells kforge's builder (a file in $KFORGE_PCH_NOTES) that this command used a header, or
    found none: then it asks for one."""
    folder = os.environ.get("KFORGE_PCH_NOTES")
    if not folder:
        return
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{kind}-{os.getpid()}.json"), "w") as f:
            json.dump({"kind": kind, "command": words, "found": found}, f)
    except OSError:
        pass  # a header is a speed-up: a build never fails for want of one


def torch_extension_flags(argv: list) -> list:
    """What the C++ compile ``argv`` gets in front of its options: ``-include`` of the precompiled
    torch/extension.h where its source starts with that include and a header fits, else nothing."""
    found = normalized(argv, (".cpp", ".cc", ".cxx"))
    if found is None:
        return []
    words, source = found
    try:
        with open(source) as f:
            if f.readline().rstrip("\n") != TORCH_EXTENSION_LINE:
                return []
    except OSError:
        return []
    folder = lookup(TORCH_EXTENSION, words)
    note(TORCH_EXTENSION, words, folder is not None)
    return [] if folder is None else ["-include", os.path.join(folder, TORCH_EXTENSION_HEADER)]


def split_prefix(text: bytes, prefix: bytes):
    """cudafe++'s output ``text`` without the lines ``prefix`` (its lines after the first, which
    names the source), or None where they are not exactly those."""
    first = text.find(b"\n") + 1
    if not first or not text.startswith(prefix, first):
        return None
    return text[:first] + text[first + len(prefix):]


def prefix_of(text: bytes, stub_name: str):
    """The header lines of cudafe++'s output of a source holding only includes: after the first line
    (the source's name), up to the blank line before the stub's part."""
    lines = text.split(b"\n")
    marker = f'# 1 "{stub_name}"'.encode()
    if marker not in lines:
        return None
    end = lines.index(marker)
    if end < 2 or lines[end - 1] != b"":
        return None
    return b"\n".join(lines[1:end - 1]) + b"\n"


# -- What the builder makes headers for -------------------------------------------------------------

_SAFE_FLAG = re.compile(
    r"^(-O[0-3s]?|-Ofast|-g|-w|-fPIC|-fpic|-fopenmp|-ffast-math|-fno-math-errno|-fno-strict-aliasing"
    r"|-fvisibility=hidden|-std=(c|gnu)\+\+[0-9a-z]+|-W(all|extra|error|no-[a-z-]+)|-m(arch|tune)=[a-z0-9-]+"
    r"|-m(avx|avx2|fma|f16c|sse4\.2|bmi2)|-pthread"
    r"|-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?|-U[A-Za-z_][A-Za-z0-9_]*"
    # nvcc's
    r"|--?use_fast_math|--expt-relaxed-constexpr|--expt-extended-lambda|--extended-lambda|-lineinfo"
    r"|-gencode=arch=compute_[0-9]+[af]?,code=(sm|compute)_[0-9]+[af]?|-arch=(sm|compute)_[0-9]+[af]?"
    r"|--?maxrregcount=[0-9]+|-Xptxas=-(v|O[0-3])|--ptxas-options=-(v|O[0-3])|-ftz=(true|false)"
    r"|-prec-(div|sqrt)=(true|false)|-fmad=(true|false))$")
_SAFE_VALUE = {
    "-D": re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]*)?$"),
    "-U": re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$"),
    "--compiler-options": re.compile(r"^'?-fPIC'?$"),
    "-Xcompiler": re.compile(r"^'?-fPIC'?$"),
    "-gencode": re.compile(r"^arch=compute_[0-9]+[af]?,code=(sm|compute)_[0-9]+[af]?$"),
    "-arch": re.compile(r"^(sm|compute)_[0-9]+[af]?$"),
}


def unsafe(words: list, include_roots: list, compilers: list):
    """Why the builder makes no header for this command, or None: every word must be a flag on the
    list above or an include folder under ``include_roots``, run by one of ``compilers`` (nvcc's
    host compiler, ``-ccbin``, too)."""
    if os.path.realpath(shutil.which(words[0]) or words[0]) not in compilers:
        return f"{words[0]} is not the compiler kforge runs"
    roots = [os.path.realpath(r) for r in include_roots]
    i = 1
    while i < len(words):
        word = words[i]
        if word in ("-ccbin", "--compiler-bindir"):
            host = words[i + 1] if i + 1 < len(words) else ""
            if os.path.realpath(shutil.which(host) or host) not in compilers:
                return f"{word} {host} is not a compiler kforge runs"
            i += 2
            continue
        if word in ("-isystem", "-I") or (word.startswith(("-isystem", "-I")) and word not in ("-isystem", "-I")):
            if word in ("-isystem", "-I"):
                folder, i = (words[i + 1] if i + 1 < len(words) else ""), i + 2
            else:
                folder, i = word[len("-isystem") if word.startswith("-isystem") else 2:], i + 1
            real = os.path.realpath(folder.strip("\"'"))
            if not any(real == r or real.startswith(r + os.sep) for r in roots):
                return f"include folder {folder} is not one of torch's, CUDA's, Python's or kforge's"
            continue
        if word in _SAFE_VALUE:
            value = words[i + 1] if i + 1 < len(words) else ""
            if not _SAFE_VALUE[word].match(value):
                return f"{word} {value} is not a flag kforge makes headers for"
            i += 2
            continue
        if not _SAFE_FLAG.match(word):
            return f"{word} is not a flag kforge makes headers for"
        i += 1
    return None


def read_notes(folder: str, limit: int = 8) -> list:
    """The compiles' notes in ``folder`` (written inside the sandbox: neither the folder nor a note
    may be a link, and each is checked for its form)."""
    notes = []
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return notes
    try:
        for name in sorted(os.listdir(dir_fd))[:limit]:
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
                with os.fdopen(fd) as f:
                    note = json.loads(f.read(1 << 16))
            except (OSError, ValueError):
                continue
            command = note.get("command") if isinstance(note, dict) else None
            if (note.get("kind") in KINDS and isinstance(command, list) and 1 < len(command) < 400
                    and all(isinstance(w, str) and len(w) < 4096 for w in command)):
                checked = {"kind": note["kind"], "command": command, "found": note.get("found") is True}
                if checked not in notes:
                    notes.append(checked)
    finally:
        os.close(dir_fd)
    return notes


def depfile_paths(text: str) -> list:
    """The prerequisites of a make-style dependency file (gcc -MD), in order."""
    body = text.replace("\\\n", " ")
    _, _, rest = body.partition(":")
    return [p.replace("\\ ", " ") for p in re.findall(r"(?:\\ |[^\s])+", rest)]
