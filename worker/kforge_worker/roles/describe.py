"""What a kernel engineer needs to know about a problem as it runs: its source with the ``--set``
overrides written into the assignments they replace, and the shapes and dtypes of its inputs,
constructor arguments and outputs.

    python -m kforge_worker describe PROBLEM --set N=V ... --json FILE

Inputs are drawn on the ``meta`` device where the problem allows it, so describing a problem with
gigabyte-sized inputs allocates nothing; outputs come from one forward pass on meta tensors too.
The reference is trusted code (the same file the reference worker runs).
"""

import ast
import json
from pathlib import Path
from typing import Dict, List

import torch

from kforge_worker.common import problem


def source_as_run(path: str, overrides: Dict[str, object]) -> str:
    """The problem's source with each overridden top-level assignment replaced by its new value."""
    source = Path(path).read_text()
    if not overrides:
        return source
    lines = source.splitlines()
    nodes = problem.top_level_assignments(ast.parse(source))
    # Replace from the bottom up so earlier line numbers stay valid.
    for name in sorted(overrides, key=lambda n: nodes[n].lineno if n in nodes else 0, reverse=True):
        node = nodes.get(name)
        if node is None:
            continue  # load_problem reports unknown names
        old = ast.get_source_segment(source, node.value) or "?"
        new = f"{name} = {overrides[name]!r}  # --set {name}={overrides[name]!r} (the file says {old})"
        lines[node.lineno - 1:node.end_lineno] = [new]
    return "\n".join(lines) + ("\n" if source.endswith("\n") else "")


def describe_value(value) -> dict:
    if isinstance(value, torch.Tensor):
        return {"kind": "tensor", "shape": list(value.shape), "dtype": str(value.dtype).replace("torch.", "")}
    if isinstance(value, (list, tuple)):
        return {"kind": type(value).__name__, "items": [describe_value(v) for v in value]}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return {"kind": type(value).__name__, "value": value}
    return {"kind": type(value).__name__}


def _on_meta(fn):
    try:
        with torch.device("meta"):
            return fn(), "meta"
    except Exception:  # noqa: BLE001 - some problems build inputs the meta device cannot hold
        return fn(), "cpu"


def describe(path: str, overrides: Dict[str, object]) -> dict:
    module = problem.load_problem(path, overrides)
    init_inputs, _ = _on_meta(lambda: list(module.get_init_inputs()))
    inputs, device = _on_meta(lambda: list(module.get_inputs()))
    outputs: List[dict] = []
    try:
        with torch.device(device), torch.no_grad():
            model = module.Model(*init_inputs)
            out = model(*inputs)
        outputs = [describe_value(out)]
    except Exception as exc:  # noqa: BLE001 - outputs are a courtesy; the evaluation reports real errors
        outputs = [{"kind": "unknown", "why": f"{type(exc).__name__}: {exc}"[:200]}]
    return {"source": source_as_run(path, overrides),
            "inputs": [describe_value(v) for v in inputs],
            "init_inputs": [describe_value(v) for v in init_inputs],
            "outputs": outputs,
            "globals": {k: v for k, v in vars(module).items()
                        if not k.startswith("_") and isinstance(v, (int, float)) and not isinstance(v, bool)}}


def main(path: str, sets: List[str], json_path: str) -> int:
    overrides = problem.parse_sets(sets)
    Path(json_path).write_text(json.dumps(describe(path, overrides)))
    return 0
