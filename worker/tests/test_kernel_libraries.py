"""The kernel libraries candidates import live in their own package (kforge_kernels), apart from the
harness; the names older candidates use (``from kforge_worker import native``) still give the same
modules, and the harness itself names no target."""

import importlib
import re
from pathlib import Path

import pytest

import kforge_kernels
from kforge_worker import backends

WORKER = Path(__file__).resolve().parents[1]
ROOT = WORKER.parent
# Toolchain dependencies of single libraries: a machine without one skips that library, saying so.
NEEDS = {"ocl": "pyopencl", "wgsl": "wgpu"}


@pytest.mark.parametrize("library", kforge_kernels.LIBRARIES)
def test_the_older_name_is_the_same_module(library):
    if library in NEEDS:
        pytest.importorskip(NEEDS[library], reason=f"kforge_kernels.{library} needs {NEEDS[library]}")
    new = importlib.import_module(f"kforge_kernels.{library}")
    assert importlib.import_module(f"kforge_worker.{library}") is new
    assert getattr(importlib.import_module("kforge_worker"), library) is new


def test_compile_error_is_one_class_under_both_names():
    from kforge_worker.common import errors

    assert errors.CompileError is importlib.import_module("kforge_kernels.errors").CompileError


def test_kforge_worker_keeps_older_names_for_the_libraries_only():
    """A compatibility module per library, and none for the builders' plumbing (candidates never
    imported it), so that nothing of the harness can shadow a library."""
    compat = {p.stem for p in (WORKER / "kforge_worker").glob("*.py")
              if 'sys.modules[__name__] = importlib.import_module("kforge_kernels."' in p.read_text()}
    assert compat == set(kforge_kernels.LIBRARIES)
    for module in ("buildinfo", "build_client", "inline_cache", "triton_interp", "hooks"):
        assert (WORKER / "kforge_kernels" / f"{module}.py").is_file()
        assert not (WORKER / "kforge_worker" / f"{module}.py").exists(), module


def _target_names() -> set:
    """Target names that are not device kinds: the bundled targets' folders and the DSLs they build on."""
    folders = {p.name for p in (ROOT / "targets").iterdir() if (p / "target.toml").is_file()}
    return (folders | {"opencl", "pocl", "tilelang"}) - set(backends._BY_KIND)


def test_the_harness_names_no_target():
    names = re.compile(r"\b(" + "|".join(sorted(_target_names())) + r")\b")
    found = []
    for path in sorted((WORKER / "kforge_worker").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if names.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "target names in the harness (put them in target.toml or kforge_kernels):\n" + "\n".join(found)


def test_the_core_names_no_target_outside_the_target_loader():
    """C++ string literals outside src/target/ and the tests: the core learns targets from target.toml."""
    names = re.compile(r"\b(" + "|".join(sorted(_target_names())) + r")\b")
    literal = re.compile(r'"(?:\\.|[^"\\\n])*"')
    found = []
    for path in sorted((ROOT / "src").rglob("*")):
        if path.suffix not in (".cc", ".h") or path.name.endswith("_test.cc") or path.parent == ROOT / "src" / "target":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if any(names.search(s) for s in literal.findall(line)):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "target names in kforge's core:\n" + "\n".join(found)
