"""kforge's precompiled headers for load_inline builds (build_pch, pch_builder, pch_produce, host_cxx and
nvcc_lanes): which commands get one, the notes a build leaves, and with real compilers (nvcc and torch's
headers, no GPU) that the builder makes them after a build, that a later build finds them, and that
what it compiles with them is byte for byte what it compiles without."""

import json
import os
import shlex
import shutil
import subprocess
import sys
import time

import pytest

from kforge_worker.builder import build_pch, nvcc_lanes, pch_builder, sandboxed_build

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
CXX = os.path.realpath(shutil.which("c++") or "/usr/bin/c++")
ROOTS = ["/opt/torch", "/usr/local/cuda"]
# One worker runs the module and the other users of the `headers` builds (conftest.py): made once.
pytestmark = pytest.mark.xdist_group("build_pch")

MAIN_COMMAND = ["c++", "-MMD", "-MF", "main.o.d", "-DTORCH_EXTENSION_NAME=ext_0123", "-DTORCH_API_INCLUDE_EXTENSION_H",
                "-isystem", "/opt/torch/include", "-fPIC", "-std=c++17", "-c", "/b/main.cpp", "-o", "main.o", "-O3"]


def test_a_command_is_named_by_its_flags_without_its_own_files_and_extension_name():
    words, source = build_pch.normalized(MAIN_COMMAND, (".cpp",))
    assert source == "/b/main.cpp"
    assert words == ["c++", "-DTORCH_API_INCLUDE_EXTENSION_H", "-isystem", "/opt/torch/include", "-fPIC",
                     "-std=c++17", "-O3"]
    other = [w.replace("ext_0123", "ext_4567").replace("/b/", "/c/") for w in MAIN_COMMAND]
    assert build_pch.key(build_pch.TORCH_EXTENSION, build_pch.normalized(other, (".cpp",))[0]) == \
        build_pch.key(build_pch.TORCH_EXTENSION, words)
    assert build_pch.key(build_pch.TORCH_EXTENSION, words + ["-DNDEBUG"]) != build_pch.key(build_pch.TORCH_EXTENSION, words)
    assert build_pch.normalized(["c++", "-c", "a.cpp", "b.cpp"], (".cpp",)) is None  # two sources
    assert build_pch.normalized(["c++", "a.o", "-shared", "-o", "x.so"], (".cpp",)) is None  # a link


def test_headers_are_made_only_for_flags_that_cannot_run_anything(tmp_path):
    (tmp_path / "inc").mkdir()
    words = build_pch.normalized(MAIN_COMMAND, (".cpp",))[0]
    ok = dict(include_roots=ROOTS, compilers=[CXX])
    assert build_pch.unsafe(words, **ok) is None
    nvcc_words = [CXX, "-isystem", "/usr/local/cuda/include", "--compiler-options", "-fPIC", "--expt-relaxed-constexpr",
                  "-gencode=arch=compute_90a,code=sm_90a", "-D__CUDA_NO_HALF_OPERATORS__", "--use_fast_math", "-O3"]
    assert build_pch.unsafe(nvcc_words, **ok) is None
    assert build_pch.unsafe(nvcc_words + ["-ccbin", CXX], **ok) is None  # torch's -ccbin $CC
    attacks = {  # each would let the header's own compile run what the candidate chose
        "-wrapper": words + ["-wrapper", "sh,-c,touch /tmp/x"],
        "-fplugin": words + ["-fplugin=/tmp/evil.so"],
        "-B": words + ["-B", "/tmp"],
        "inc": words + ["-I", str(tmp_path / "inc")],
        "-Xcompiler": nvcc_words + ["-Xcompiler", "-fplugin=/tmp/evil.so"],
        "-ccbin": nvcc_words + ["-ccbin", "/tmp/cc"],
        "--compiler-bindir": nvcc_words + ["--compiler-bindir", "/tmp/cc"],
        "-specs": words + ["-specs=/tmp/specs"],
        "-D": words + ["-D", "X=$(touch /tmp/y)"],
    }
    for what, command in attacks.items():
        assert build_pch.unsafe(command, **ok), what
    assert "not the compiler" in build_pch.unsafe(["/tmp/c++", *words[1:]], **ok)


def test_cudafes_output_is_cut_only_after_exactly_the_header_lines():
    text = b'# 1 "/b/cuda.cu"\nA\nB\n# 8 "/b/cuda.cu"\nkernel\n'
    assert build_pch.split_prefix(text, b"A\nB\n") == b'# 1 "/b/cuda.cu"\n# 8 "/b/cuda.cu"\nkernel\n'
    assert build_pch.split_prefix(text, b"A\nC\n") is None
    assert build_pch.split_prefix(text, b"A\nB\n# 9") is None
    canonical = b'# 1 "/p/cuda.cu"\nA\nB\n\n# 1 "cuda.cudafe1.stub.c"\n#include "cuda.cudafe1.stub.c"\n'
    assert build_pch.prefix_of(canonical, "cuda.cudafe1.stub.c") == b"A\nB\n"
    assert build_pch.prefix_of(canonical, "other.stub.c") is None


def test_the_host_compile_reads_the_header_only_where_cudafes_lines_are_its_own(tmp_path):
    (tmp_path / "pch").mkdir()
    (tmp_path / "pch" / build_pch.PREFIX_HEADER).write_bytes(b"A\nB\n")
    source = tmp_path / "k.cudafe1.cpp"
    plan = nvcc_lanes.Plan([], [], [], (6, '"/opt/my gcc/gcc" -c -x c++ "k.cudafe1.cpp" -o k.o'), "k.module_id",
                           str(source), "k.cudafe1.stub.c")
    source.write_bytes(b'# 1 "k.cu"\nA\nB\nkernel\n')
    index, command = nvcc_lanes._with_prefix_header(plan, str(tmp_path / "pch"))
    assert index == 6 and shlex.split(command)[:3] == ["/opt/my gcc/gcc", "-include", str(tmp_path / "pch" / "prefix.h")]
    assert shlex.split(command)[3:] == shlex.split(plan.final[1])[1:]
    assert source.read_bytes() == b'# 1 "k.cu"\nkernel\n'
    source.write_bytes(b'# 1 "k.cu"\nA\nC\nkernel\n')  # not the header's lines: compiled whole
    assert nvcc_lanes._with_prefix_header(plan, str(tmp_path / "pch")) == plan.final
    assert source.read_bytes() == b'# 1 "k.cu"\nA\nC\nkernel\n'


def test_the_builders_cxx_runs_the_real_compiler_as_asked(tmp_path):
    """torch checks its compiler by name and runs it for its version: the shim passes all through,
    also to a $CXX of a launcher and a compiler."""
    for real in ("c++", "env c++"):
        r = subprocess.run([sandboxed_build._CXX_WITH_HEADERS, "-dumpfullversion"], capture_output=True, text=True,
                           env={**os.environ, "KFORGE_PCH_PYTHON": sys.executable, "KFORGE_REAL_CXX": real})
        plain = subprocess.run(["c++", "-dumpfullversion"], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout == plain.stdout, r.stderr
    assert "g++" in os.path.basename(sandboxed_build._CXX_WITH_HEADERS)  # torch's check_compiler_ok_for_platform


def test_a_header_is_not_used_once_a_header_it_read_changed(tmp_path, monkeypatch):
    monkeypatch.setenv("KFORGE_PCH_DIR", str(tmp_path))
    read = tmp_path / "read.h"
    read.write_text("int x;\n")
    folder = tmp_path / build_pch.key(build_pch.TORCH_EXTENSION, ["c++", "-O3"])
    folder.mkdir()
    st = read.stat()
    (folder / "deps.json").write_text(json.dumps([[str(read), st.st_size, st.st_mtime_ns]]))
    assert build_pch.lookup(build_pch.TORCH_EXTENSION, ["c++", "-O3"]) == str(folder)
    read.write_text("int x, y;\n")
    assert build_pch.lookup(build_pch.TORCH_EXTENSION, ["c++", "-O3"]) is None
    assert build_pch.lookup(build_pch.TORCH_EXTENSION, ["c++", "-O2"]) is None


def test_a_compile_without_a_header_leaves_a_note_and_the_notes_are_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("KFORGE_PCH_DIR", str(tmp_path / "pch"))
    monkeypatch.setenv("KFORGE_PCH_NOTES", str(tmp_path / "wanted"))
    (tmp_path / "main.cpp").write_text(build_pch.TORCH_EXTENSION_LINE + "\nint f();\n")
    (tmp_path / "other.cpp").write_text("#include <vector>\n" + build_pch.TORCH_EXTENSION_LINE + "\n")
    assert build_pch.torch_extension_flags(["c++", "-c", str(tmp_path / "other.cpp"), "-O3"]) == []
    assert not (tmp_path / "wanted").exists()  # not a source that starts with the header
    assert build_pch.torch_extension_flags(["c++", "-c", str(tmp_path / "main.cpp"), "-O3"]) == []
    (tmp_path / "wanted" / "junk.json").write_text("{not json")
    (tmp_path / "wanted" / "other.json").write_text(json.dumps({"kind": "shell", "command": ["sh", "-c", "x"]}))
    os.symlink("/etc/passwd", tmp_path / "wanted" / "link.json")
    assert build_pch.read_notes(str(tmp_path / "wanted")) == [
        {"kind": build_pch.TORCH_EXTENSION, "command": ["c++", "-O3"], "found": False}]
    os.symlink(tmp_path / "wanted", tmp_path / "linked")  # a folder the sandbox made a link
    assert build_pch.read_notes(str(tmp_path / "linked")) == []


def test_the_builder_makes_headers_from_an_emptied_build_folder_and_refuses_unsafe_notes(tmp_path, monkeypatch):
    monkeypatch.setenv("KFORGE_PCH_DIR", str(tmp_path / "pch"))
    (tmp_path / "pch").mkdir()
    build = tmp_path / "build"
    (build / pch_builder.NOTES).mkdir(parents=True)
    safe = [pch_builder.compilers()[0], "-O3"]
    (build / pch_builder.NOTES / "a.json").write_text(json.dumps({"kind": build_pch.TORCH_EXTENSION, "command": safe}))
    (build / pch_builder.NOTES / "b.json").write_text(json.dumps({"kind": build_pch.TORCH_EXTENSION,
                                                                    "command": safe + ["-fplugin=/tmp/p.so"]}))
    (build / "pch-0").mkdir()  # a header planted where the builder's own goes
    (build / "pch-0" / "torch_extension.h.gch").write_bytes(b"planted")
    seen = []

    def run(argv, cwd, timeout):
        seen.append((argv, sorted(os.listdir(cwd))))
        return subprocess.CompletedProcess(argv, 1, "", "no compiler here")

    headers, log = pch_builder.make_wanted(str(build), run, ["bwrap", "--"], sys.executable, 60)
    assert headers == {build_pch.TORCH_EXTENSION: "none"}
    assert len(seen) == 1 and seen[0][1] == []  # one header, made in an empty folder
    assert seen[0][0][:2] == ["bwrap", "--"] and json.loads(seen[0][0][-1]) == safe
    assert "-fplugin=/tmp/p.so is not a flag" in log and "not made: no compiler here" in log
    assert not any(os.path.isdir(tmp_path / "pch" / name) for name in os.listdir(tmp_path / "pch"))

    # Builds of one flag set at once: the header is made by the one that claims it first.
    (build / pch_builder.NOTES).mkdir()
    (build / pch_builder.NOTES / "a.json").write_text(json.dumps({"kind": build_pch.TORCH_EXTENSION, "command": safe}))
    held = pch_builder._claim(str(tmp_path / "pch"), build_pch.key(build_pch.TORCH_EXTENSION, safe))
    assert held is not None
    seen.clear()
    _, log = pch_builder.make_wanted(str(build), run, ["bwrap", "--"], sys.executable, 60)
    assert seen == [] and "being made by another build" in log
    os.close(held)


def test_the_builder_renews_the_headers_a_build_used_and_keeps_the_store_within_its_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("KFORGE_PCH_DIR", str(tmp_path / "pch"))
    monkeypatch.setenv("KFORGE_PCH_MAX_GB", "0")
    (tmp_path / "pch").mkdir()
    build = tmp_path / "build"
    (build / pch_builder.NOTES).mkdir(parents=True)
    used, wanted = [pch_builder.compilers()[0], "-O3"], [pch_builder.compilers()[0], "-O2"]
    (build / pch_builder.NOTES / "a.json").write_text(json.dumps({"kind": build_pch.TORCH_EXTENSION, "command": used,
                                                                    "found": True}))
    (build / pch_builder.NOTES / "b.json").write_text(json.dumps({"kind": build_pch.CUDA_PREFIX, "command": wanted}))
    two_hours_ago = time.time() - 7200
    for name in (build_pch.key(build_pch.TORCH_EXTENSION, used), "0" * 24):  # the one used, a stale one
        (tmp_path / "pch" / name).mkdir()
        (tmp_path / "pch" / name / "prefix.h.gch").write_bytes(b"header")
        os.utime(tmp_path / "pch" / name, (two_hours_ago, two_hours_ago))

    def run(argv, cwd, timeout):
        return subprocess.CompletedProcess(argv, 1, "", "no compiler here")

    headers, log = pch_builder.make_wanted(str(build), run, [], sys.executable, 60)
    assert headers == {build_pch.TORCH_EXTENSION: "used", build_pch.CUDA_PREFIX: "none"}
    headers_left = [name for name in os.listdir(tmp_path / "pch") if not name.startswith(".making-")]
    assert headers_left == [build_pch.key(build_pch.TORCH_EXTENSION, used)]  # this build's: kept
    assert time.time() - os.stat(tmp_path / "pch" / headers_left[0]).st_mtime < 60  # and marked used now
    assert "1 least recently used precompiled headers removed" in log


# -- With the real compilers -------------------------------------------------------------------------

torch = pytest.importorskip("torch")
needs_nvcc = pytest.mark.skipif(not os.path.exists(NVCC), reason="nvcc not installed: headers of nvcc's host pass")

# `headers` (conftest.py): the two real builds, made once per session.


@needs_nvcc
def test_a_first_build_makes_both_headers_and_a_later_build_finds_them(headers):
    store, build, first, second, _ = headers
    assert "precompiled torch_extension header made" in first["log"], first["log"][-3000:]
    assert "precompiled cuda_prefix header made" in first["log"], first["log"][-3000:]
    # Not the lock files, nor the lean ATen headers the builds compiled cuda.cu with (lean_aten).
    kinds = sorted(name for name in os.listdir(store) if not name.startswith((".", "lean-aten-")))
    assert len(kinds) == 2
    assert first["precompiled_headers"] == {build_pch.TORCH_EXTENSION: "made", build_pch.CUDA_PREFIX: "made"}
    assert second["precompiled_headers"] == {build_pch.TORCH_EXTENSION: "used", build_pch.CUDA_PREFIX: "used"}
    assert "precompiled" not in second["log"]
    assert second["cuda_headers"] == "torch/types.h" and second["aten_operators"] == "named"
    for folder in kinds:
        assert oct((store / folder).stat().st_mode & 0o777) == "0o755"


def _compile_words(build, target):
    """The command ninja ran for ``target`` in a load_inline build folder, as words."""
    r = subprocess.run(["ninja", "-t", "commands", target], cwd=build, capture_output=True, text=True)
    return r.stdout.strip().splitlines()[-1]


@needs_nvcc
def test_main_cpp_with_the_header_is_the_object_without_it(headers, monkeypatch):
    store, build, _, _, env = headers
    command = _compile_words(build, "main.o")
    assert command.startswith(sandboxed_build._CXX_WITH_HEADERS)
    real = os.environ.get("CXX") or "c++"  # the compiler the wrapper runs (KFORGE_REAL_CXX)
    plain = command.replace(sandboxed_build._CXX_WITH_HEADERS, real, 1).replace("-o main.o", "-o plain.o")
    assert subprocess.run(plain, shell=True, cwd=build).returncode == 0
    assert (build / "plain.o").read_bytes() == (build / "main.o").read_bytes()
    # What the wrapper puts in front of this command, then gcc told to list what it loads.
    monkeypatch.setenv("KFORGE_PCH_DIR", env["KFORGE_PCH_DIR"])
    monkeypatch.chdir(build)
    extra = build_pch.torch_extension_flags([real, *shlex.split(command)[1:]])
    assert extra == ["-include", str(next(store.glob("*/torch_extension.h")))]
    used = subprocess.run([real, *extra, *shlex.split(plain)[1:], "-H"], cwd=build, capture_output=True, text=True)
    assert used.returncode == 0 and f"! {extra[1]}.gch" in used.stderr  # gcc loaded the precompiled header


@needs_nvcc
def test_cuda_cu_with_the_header_is_the_object_without_it(headers, monkeypatch):
    store, build, first, second, env = headers
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(build)
    words = shlex.split(_compile_words(build, "cuda.cuda.o"))
    args = words[words.index(nvcc_lanes.__file__) + 2:]  # after the lanes' script and nvcc
    # The header the second build used (the store's one cuda_prefix folder): found by that build's
    # own lanes inside the sandbox (test_a_first_build_makes_both_headers_and_a_later_build_finds_them).
    folders = [str(f.parent) for f in store.glob(f"*/{build_pch.PREFIX_HEADER}")]
    assert len(folders) == 1 and second["precompiled_headers"][build_pch.CUDA_PREFIX] == "used", \
        (second.get("precompiled_headers"), os.listdir(store), first["log"][-3000:])
    folder = folders[0]
    module = build_pch.module_id(folder)
    results = {}
    for label, header in (("with", folder), ("without", None)):
        keep = build / f"keep-{label}"
        keep.mkdir()
        own = [f"{label}.o" if a == "cuda.cuda.o" else a for a in args]
        p = nvcc_lanes.plan(nvcc_lanes.dry_run(NVCC, own, str(keep)), f"{label}.o")
        assert nvcc_lanes.run(p, module, "cuda.cu", header) == 0
        results[label] = ((build / f"{label}.o").read_bytes(), os.path.getsize(p.host_source))
    assert results["with"][0] == results["without"][0] == (build / "cuda.cuda.o").read_bytes()
    prefix = os.path.getsize(os.path.join(folder, build_pch.PREFIX_HEADER))
    assert results["with"][1] < results["without"][1] - prefix + 4096  # only the lines after the header compiled
