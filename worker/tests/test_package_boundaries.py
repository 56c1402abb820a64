"""kforge_worker's sub-packages import only what their docstrings allow, and none imports another in
a circle (the Python side of the C++ layer test). Each sub-package's ``__init__.py`` docstring says
``May import: a, b.`` (its sibling sub-packages) or ``May import: nothing else of kforge_worker.``;
a module may always import its own sub-package, never the top level (the entry point and the
compatibility names of kforge_kernels sit there, above everything). The kernel libraries
(kforge_kernels) are copied beside a standalone best.py, so they import nothing of kforge_worker."""

import ast
import re
import textwrap
from pathlib import Path

WORKER = Path(__file__).resolve().parents[1]
PACKAGE = "kforge_worker"
_MAY_IMPORT = re.compile(r"^May import:\s*(.+?)\.?\s*$", re.M)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(root: Path, path: Path) -> list:
    """(line, dotted name) of every import of ``path`` (at any depth: lazy imports count), names
    imported from a package resolved to its submodules where they are modules."""
    tree = ast.parse(path.read_text(), str(path))
    this = _module_name(root, path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                where = root.parent / Path(*sub.split("."))
                is_module = where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()
                out.append((node.lineno, sub if is_module else base))
    return out


def _sub_package(name: str) -> str:
    """The sub-package of kforge_worker a dotted name is in ('' for the top level, None outside)."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    return parts[1] if len(parts) > 1 else ""


def allowed_imports(root: Path) -> dict:
    """Sub-package -> the sibling sub-packages its docstring allows."""
    allowed = {}
    for init in sorted(root.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        found = _MAY_IMPORT.search(doc)
        assert found, f"{init.relative_to(root.parent)}: the docstring says no 'May import: ...' line"
        said = found.group(1).strip()
        allowed[init.parent.name] = set() if said.startswith("nothing") else {w.strip() for w in said.split(",")}
    return allowed


def _is_sub_package(root: Path, name: str) -> bool:
    return (root / name / "__init__.py").is_file()


def crossings(root: Path) -> tuple:
    """(violations, edges): imports across a boundary the docstrings forbid, as readable lines, and
    the sub-package import graph that the modules actually have."""
    allowed = allowed_imports(root)
    violations, edges = [], {name: set() for name in allowed}
    for path in sorted(root.rglob("*.py")):
        own = _sub_package(_module_name(root, path))
        if not own or not _is_sub_package(root, own):
            continue  # the top level (entry point, compatibility names) may import anything
        for line, name in _imports(root, path):
            target = _sub_package(name)
            if target is None or target == own:
                continue
            where = f"{path.relative_to(root.parent)}:{line}"
            if target == "" or not _is_sub_package(root, target):
                violations.append(f"{where}: {own} imports {name}, the top level of {PACKAGE}")
                continue
            edges[own].add(target)
            if target not in allowed[own]:
                violations.append(f"{where}: {own} imports {name}; its docstring allows "
                                  f"{', '.join(sorted(allowed[own])) or 'nothing else of ' + PACKAGE}")
    return violations, edges


def circles(edges: dict) -> list:
    """Each circle of a directed graph (name -> names), once, as the path around it."""
    found, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def module_edges(root: Path) -> dict:
    """Module -> the modules of the package it imports."""
    mods = {_module_name(root, p): p for p in root.rglob("*.py")}
    edges = {}
    for name, path in mods.items():
        targets = set()
        for _, imported in _imports(root, path):
            while imported and imported not in mods:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and imported.count(".") >= 1:  # a package's own __init__ aside
                targets.add(imported)
        edges[name] = targets
    return edges


def test_no_module_imports_across_a_boundary_its_docstring_forbids():
    violations, _ = crossings(WORKER / PACKAGE)
    assert not violations, "imports across a package boundary:\n" + "\n".join(violations)


def test_the_sub_packages_import_each_other_in_no_circle():
    _, edges = crossings(WORKER / PACKAGE)
    assert not circles(edges), f"circles between sub-packages: {circles(edges)}"
    assert not circles(allowed_imports(WORKER / PACKAGE)), "the docstrings allow a circle"


def test_no_two_modules_import_each_other_in_a_circle():
    found = circles(module_edges(WORKER / PACKAGE))
    assert not found, "import circles between modules:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_kernel_libraries_import_nothing_of_the_harness():
    root = WORKER / "kforge_kernels"
    found = [f"{p.relative_to(WORKER)}:{line}: {name}" for p in sorted(root.rglob("*.py"))
             for line, name in _imports(root, p) if _sub_package(name) is not None]
    assert not found, "kforge_kernels imports kforge_worker:\n" + "\n".join(found)


def _tree(tmp_path: Path, files: dict) -> Path:
    root = tmp_path / PACKAGE
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_the_checks_see_a_forbidden_import_a_circle_and_the_top_level(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "native.py": "",
        "low/__init__.py": '"""Low.\n\nMay import: nothing else of kforge_worker.\n"""\n',
        "low/a.py": "def f():\n    from kforge_worker.high import b  # lazy, still an import\n",
        "low/c.py": "from kforge_worker import native\n",
        "high/__init__.py": '"""High.\n\nMay import: low.\n"""\n',
        "high/b.py": "from kforge_worker.low import a\nfrom . import d\n",
        "high/d.py": "from .b import x\n",
    })
    violations, edges = crossings(root)
    assert any("low/a.py:2: low imports kforge_worker.high.b" in v for v in violations), violations
    assert any("low/c.py:1: low imports kforge_worker.native, the top level" in v for v in violations), violations
    assert not any("high/" in v for v in violations), violations
    assert circles(edges) == [["high", "low", "high"]]
    assert ["kforge_worker.high.b", "kforge_worker.high.d", "kforge_worker.high.b"] in circles(module_edges(root))
