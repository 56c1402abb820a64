"""Loading KernelBench-format problems with size overrides, and deriving varied shapes.

Overrides (``--set N=V``) are applied by rewriting the module's top-level assignments before the
file executes, so globals derived from them (``dim = batch_size * 4``) see the new values.
"""

import ast
import importlib.util
import sys
import types
from pathlib import Path
from typing import Dict, List

from kforge_worker.common.errors import OverrideError, ProblemError

# An integer global is treated as a size, and varied by --shapes, when its value is at least this.
# Smaller integers are usually kernel sizes, strides, dims or counts whose change alters the problem.
SIZE_GLOBAL_MIN = 8


def parse_value(text: str):
    """Parses a --set value as a Python literal (1024, 0.5, (3, 3), 'x'); a bare word stays a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_sets(items: List[str]) -> Dict[str, object]:
    """--set NAME=VALUE items as overrides of a problem's module-level names."""
    overrides = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise OverrideError(f"--set {item}: expected NAME=VALUE")
        overrides[name] = parse_value(value)
    return overrides


def top_level_assignments(tree: ast.Module) -> Dict[str, ast.stmt]:
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            names[node.target.id] = node
    return names


def check_override_type(file_name: str, name: str, old: ast.expr, value) -> None:
    """A --set value of another kind than the number the file assigns (``batch_size=abc``, or 2.5 for an
    integer size) is refused here, with both values, rather than failing later inside torch."""
    if not isinstance(old, ast.Constant) or type(old.value) not in (int, float):
        return
    wanted = type(old.value)
    ok = type(value) is int or (wanted is float and type(value) is float)
    if not ok:
        kind = "an integer" if wanted is int else "a number"
        raise OverrideError(f"--set {name}={value!r}: {file_name} sets {name} to {old.value!r}, so the value must be "
                           f"{kind}")


def load_module(path: str, module_name: str, overrides: Dict[str, object] = None) -> types.ModuleType:
    """Executes a Python file as a fresh module, with top-level assignments in ``overrides`` replaced."""
    overrides = overrides or {}
    source_path = Path(path)
    source = source_path.read_text()
    tree = ast.parse(source, filename=str(source_path))
    assignments = top_level_assignments(tree)
    unknown = sorted(set(overrides) - set(assignments))
    if unknown:
        raise OverrideError(
            f"--set {', '.join(unknown)}: not a top-level assignment in {source_path.name} "
            f"(known: {', '.join(sorted(assignments)) or 'none'})"
        )
    for name, value in overrides.items():
        node = assignments[name]
        check_override_type(source_path.name, name, node.value, value)
        node.value = ast.copy_location(ast.parse(repr(value), mode="eval").body, node.value)
    ast.fix_missing_locations(tree)
    module = types.ModuleType(module_name)
    module.__file__ = str(source_path)
    sys.modules[module_name] = module
    exec(compile(tree, str(source_path), "exec"), module.__dict__)
    return module


def load_problem(path: str, overrides: Dict[str, object] = None, module_name: str = "kforge_problem") -> types.ModuleType:
    module = load_module(path, module_name, overrides)
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise ProblemError(f"{Path(path).name} defines no {name} (a KernelBench problem needs Model, get_inputs, get_init_inputs)")
    return module


def size_globals(path: str) -> Dict[str, int]:
    """Top-level integer literals that look like sizes (value >= SIZE_GLOBAL_MIN)."""
    tree = ast.parse(Path(path).read_text())
    sizes = {}
    for name, node in top_level_assignments(tree).items():
        value = node.value
        if isinstance(value, ast.Constant) and type(value.value) is int and value.value >= SIZE_GLOBAL_MIN:
            sizes[name] = value.value
    return sizes


# Each variant scales every size global; the odd offsets produce sizes that are not powers of two,
# which is where tiling and vectorisation bugs show.
_VARIANT_RULES = [
    lambda n: n // 2 + 1,
    lambda n: n + n // 4 + 3,
    lambda n: max(1, n // 3 + 5),
    lambda n: n + 7,
]


ALIGNMENT_KEPT = 256  # the largest power-of-two factor of a size an aligned variant keeps


def aligned_half(n: int) -> int:
    """About half of ``n``, keeping the power of two that divides it (up to ALIGNMENT_KEPT): a kernel
    written for the problem's own sizes (float4 loads, tiles that divide a row) runs on it."""
    align = min(n & -n, ALIGNMENT_KEPT)
    half = n // 2 // align * align
    return half if align <= half != n else n + align


def shape_variants(path: str, base_overrides: Dict[str, object], count: int,
                   aligned: bool = False) -> List[Dict[str, object]]:
    """Up to ``count`` override sets that vary the problem's size globals (after ``base_overrides``).
    ``aligned``: one variant of aligned_half sizes instead, for the check kforge adds on its own when
    null kernels pass at the problem's sizes; the odd sizes are for generality the user asks for."""
    sizes = size_globals(path)
    for name, value in base_overrides.items():
        if name in sizes and isinstance(value, int):
            sizes[name] = value
        elif name in sizes:
            del sizes[name]
    variants = []
    for rule in [aligned_half][:count] if aligned else _VARIANT_RULES[:count]:
        overrides = dict(base_overrides)
        overrides.update({name: max(1, rule(value)) for name, value in sizes.items()})
        variants.append(overrides)
    return variants
