"""kforge's builder makes the precompiled headers a load_inline build asked for (build_pch).

After a build, the compiles' notes in the build folder name commands that found no header. For each
whose every word is on build_pch's list (``unsafe``) and that has none yet, pch_produce.py makes one
in the compiler's sandbox from its own sources, and this process installs what it made: files of
its own, read-only to all, in a new folder of $KFORGE_PCH_DIR published with an atomic rename, as
sandboxed_build installs libraries. The headers of one build are made side by side, and the store
then kept within its budget (pch_store).
"""

import fcntl
import json
import os
import shutil
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from kforge_worker.builder import build_folders, build_pch, lean_aten, pch_produce, pch_store

NOTES = ".kforge-pch-notes"  # the compiles' notes in a build folder
_MAX_HEADER_BYTES = 4 << 30
_MAX_TEXT_BYTES = 64 << 20


def include_roots() -> list:
    """Folders whose headers a made header may read: torch's, CUDA's, Python's and kforge's (its
    package and its lean ATen headers)."""
    import torch
    from torch.utils import cpp_extension

    roots = [os.path.dirname(torch.__file__), os.path.dirname(os.path.abspath(__file__))]
    roots += [sysconfig.get_paths()[name] for name in ("include", "platinclude")]
    if cpp_extension.CUDA_HOME:
        roots.append(cpp_extension.CUDA_HOME)
    lean = lean_aten.folder(create=False)  # made by this builder from torch's headers
    return roots + ([lean] if lean else [])


def compilers() -> list:
    """The compilers a made header's command may run: the C++ compiler load_inline uses, nvcc, and
    the host compilers torch hands nvcc ($CC as -ccbin) or nvcc finds itself."""
    from torch.utils import cpp_extension

    names = [os.environ.get("CXX") or "c++", os.environ.get("CC") or "cc", "gcc", "g++"]
    if cpp_extension.CUDA_HOME:
        names.append(os.path.join(cpp_extension.CUDA_HOME, "bin", "nvcc"))
    return [os.path.realpath(found) for found in map(shutil.which, names) if found]


def _copy(source: str, target: str, limit: int) -> None:
    """Copies a file the sandbox wrote into one of this process, refusing links and special files."""
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as src:
        st = os.fstat(src.fileno())
        if st.st_mode & 0o170000 != 0o100000 or st.st_size > limit:
            raise OSError(f"{os.path.basename(source)} is not a regular file under {limit} bytes")
        with open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 16 << 20)


def _dependencies(depfile: str) -> list:
    """[path, size, mtime_ns] of every header the made header read (its -MD file)."""
    with open(depfile, errors="replace") as f:
        paths = build_pch.depfile_paths(f.read(_MAX_TEXT_BYTES))
    deps = []
    for path in paths[1:]:  # the first is the header's own source
        st = os.stat(path)
        deps.append([os.path.abspath(path), st.st_size, st.st_mtime_ns])
    return deps


def _install(kind: str, made: str, folder: str) -> None:
    base = os.path.dirname(folder)
    staging = tempfile.mkdtemp(dir=base, prefix=".install-")
    try:
        if kind == build_pch.TORCH_EXTENSION:
            header = build_pch.TORCH_EXTENSION_HEADER
            with open(os.path.join(staging, header), "w") as f:
                f.write(build_pch.TORCH_EXTENSION_LINE + "\n")
            deps = _dependencies(os.path.join(made, "deps.d"))
        else:
            header = build_pch.PREFIX_HEADER
            _copy(os.path.join(made, header), os.path.join(staging, header), _MAX_TEXT_BYTES)
            with open(os.path.join(staging, "module_id"), "w") as f:
                f.write(module_id(os.path.basename(folder)) + "\n")
            deps = []  # its lines are compared with each build's own before they are used
        _copy(os.path.join(made, header + ".gch"), os.path.join(staging, header + ".gch"), _MAX_HEADER_BYTES)
        with open(os.path.join(staging, "deps.json"), "w") as f:
            json.dump(deps, f)
        build_folders.publish(staging, folder, lambda: os.path.isdir(folder))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _claim(base: str, key: str):
    """An open descriptor holding the lock of making ``key``'s header, or None where another build
    holds it (builds of one flag set at once make its headers once). The kernel drops the lock with
    the process; the lock files stay, empty."""
    fd = os.open(os.path.join(base, f".making-{key}"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    if os.path.isdir(os.path.join(base, key)):  # made while this build ran
        os.close(fd)
        return None
    return fd


def module_id(key: str) -> str:
    """The module id a cuda_prefix header is made with (nvcc_lanes.module_id's shape, for cuda.cu)."""
    return f"_{key[:8]}_7_cuda_cu"


def make_wanted(build_dir: str, run, sandbox: list, python: str, timeout: float):
    """Makes and installs the headers the build in ``build_dir`` asked for; ``run(argv, cwd,
    timeout)`` runs a command (sandboxed_build's). The notes are read first, then everything
    else in ``build_dir`` goes. Returns ({kind: "used" | "made" | "none"} of the build's compiles,
    lines for its log)."""
    base = build_pch.root()
    notes = build_pch.read_notes(os.path.join(build_dir, NOTES))
    if not base or not notes:
        return {}, ""
    headers = {note["kind"]: "used" if note["found"] else "none" for note in notes}
    keyed = [(n["kind"], n["command"], build_pch.key(n["kind"], n["command"]), n["found"]) for n in notes]
    pch_store.mark_used(base, [key for _, _, key, found in keyed if found])
    wanted = [(kind, words, key) for kind, words, key, found in keyed
              if not found and not os.path.isdir(os.path.join(base, key))]
    if not wanted:
        return headers, ""
    roots, allowed = include_roots(), compilers()
    todo, log = [], []
    for kind, words, key in wanted:
        reason = build_pch.unsafe(words, roots, allowed)
        lock = None if reason else _claim(base, key)
        if reason:
            log.append(f"no precompiled {kind} header: {reason}")
        elif lock is None:
            log.append(f"precompiled {kind} header of these flags being made by another build")
        else:
            todo.append((kind, words, key, lock))
    if not todo:
        return headers, "\n".join(log)
    build_folders.empty(build_dir)
    start = time.monotonic()

    def make(number: int, kind: str, words: list, key: str, lock: int) -> str:
        made = os.path.join(build_dir, f"pch-{number}")  # made by the sandbox, in the folder it can write
        argv = [python, pch_produce.__file__, kind, made, json.dumps(words)]
        if kind == build_pch.CUDA_PREFIX:
            argv.append(module_id(key))
        try:  # the lock is held until this header is installed or given up
            try:
                r = run(sandbox + argv, build_dir, timeout)
            except Exception as e:  # build_folders.BuildFailed: past its time, or no compiler
                return f"precompiled {kind} header not made: {e}"
            if r.returncode != 0:
                return f"precompiled {kind} header not made: {(r.stdout + r.stderr).strip()[-500:]}"
            try:
                _install(kind, made, os.path.join(base, key))
            except OSError as e:
                return f"precompiled {kind} header not installed: {e}"
        finally:
            os.close(lock)
        headers[kind] = "made"
        return f"precompiled {kind} header made in {time.monotonic() - start:.1f} s: later builds of these flags use it"

    with ThreadPoolExecutor(len(todo)) as pool:
        log += list(pool.map(lambda job: make(*job), ((i, *t) for i, t in enumerate(todo))))
    removed = pch_store.evict(base, pch_store.budget_bytes(), keep={key for _, _, key, _ in keyed})
    if removed:
        log.append(f"{len(removed)} least recently used precompiled headers removed "
                   f"(the store's budget: $KFORGE_PCH_MAX_GB, default {pch_store.DEFAULT_MAX_GB:g})")
    return headers, "\n".join(log)
