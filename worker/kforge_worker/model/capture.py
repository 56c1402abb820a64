"""Which operators each module of the model runs, and how its modules pass tensors to each other.

The graph comes from torch.export (non-strict), whose nodes carry the module path they ran in. Where
export fails, the operators are recorded while the model runs eagerly (a dispatch mode), which gives
each module's operators but no dataflow between modules: no fused chains then, and the analysis says
why (``method`` and ``fallback_reason``)."""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

import torch
from torch.utils._python_dispatch import TorchDispatchMode


@dataclass
class Capture:
    method: str                                   # "torch.export" or "eager"
    fallback_reason: str = ""                     # why export was not used
    ops: Dict[str, List[str]] = field(default_factory=dict)  # module path -> its own operators (not its children's)
    # Export only: for each module path, the nodes (by name) it produced and the nodes it read from outside.
    produced: Dict[str, Set[str]] = field(default_factory=dict)
    consumed: Dict[str, Set[str]] = field(default_factory=dict)
    users: Dict[str, Set[str]] = field(default_factory=dict)  # node -> module paths that read it ("" = the top)

    def ops_within(self, path: str) -> List[str]:
        """The operators of ``path`` and of every module inside it."""
        prefix = path + "."
        out = []
        for p, ops in self.ops.items():
            if p == path or p.startswith(prefix) or path == "":
                out.extend(ops)
        return out

    def _within(self, path: str, p: str) -> bool:
        return p == path or p.startswith(path + ".")

    def feeds_only(self, first: str, second: str) -> Optional[bool]:
        """Whether ``second`` reads nothing from outside but ``first``'s one output, and nothing else
        reads that output; None without a graph."""
        if self.method != "torch.export":
            return None
        first_nodes = set().union(*[n for p, n in self.produced.items() if self._within(first, p)] or [set()])
        second_in = set().union(*[n for p, n in self.consumed.items() if self._within(second, p)] or [set()])
        second_in -= set().union(*[n for p, n in self.produced.items() if self._within(second, p)] or [set()])
        outputs = {n for n in first_nodes if any(not self._within(first, u) for u in self.users.get(n, ()))}
        if len(outputs) != 1 or second_in != outputs:
            return False
        (out,) = outputs
        return all(self._within(first, u) or self._within(second, u) for u in self.users.get(out, ()))


def _op_name(target) -> str:
    name = getattr(target, "__name__", None) or str(target)
    if hasattr(target, "_schema"):
        name = target._schema.name.split("::")[-1]
    return name


def by_export(model: torch.nn.Module, inputs: list) -> Capture:
    program = torch.export.export(model, tuple(inputs), strict=False)
    lifted = set(program.graph_signature.inputs_to_parameters) | set(program.graph_signature.inputs_to_buffers)
    capture = Capture(method="torch.export")
    node_path: Dict[str, str] = {}
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        stack = node.meta.get("nn_module_stack") or {}
        path = list(stack.values())[-1][0] if stack else ""
        node_path[node.name] = path
        capture.ops.setdefault(path, []).append(_op_name(node.target))
        capture.produced.setdefault(path, set()).add(node.name)
        for arg in node.all_input_nodes:
            if arg.op == "placeholder" and arg.name in lifted:
                continue  # a weight, not dataflow
            capture.consumed.setdefault(path, set()).add(arg.name)
            capture.users.setdefault(arg.name, set()).add(path)
    for node in program.graph.nodes:
        if node.op == "output":
            for arg in node.all_input_nodes:
                capture.users.setdefault(arg.name, set()).add("<output>")
    return capture


class _Recorder(TorchDispatchMode):
    def __init__(self, stack: List[str], ops: Dict[str, List[str]]):
        super().__init__()
        self.stack, self.ops = stack, ops

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.setdefault(self.stack[-1], []).append(func._schema.name.split("::")[-1])
        return func(*args, **(kwargs or {}))


def by_eager(model: torch.nn.Module, inputs: list, reason: str) -> Capture:
    capture = Capture(method="eager", fallback_reason=reason)
    stack = [""]
    handles = []
    for path, module in model.named_modules():
        if not path:
            continue
        # Hooks return None: a forward hook's value would replace the module's output.
        handles.append(module.register_forward_pre_hook(lambda m, a, p=path: stack.append(p) and None))
        handles.append(module.register_forward_hook(lambda m, a, o: stack.pop() and None))
    try:
        with torch.no_grad(), _Recorder(stack, capture.ops):
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return capture


def capture(model: torch.nn.Module, inputs: list) -> Capture:
    try:
        return by_export(model, inputs)
    except Exception as e:  # any capture failure: fall back, and say so
        first_line = (str(e).strip().splitlines() or [""])[0][:300]
        return by_eager(model, inputs, f"torch.export failed ({type(e).__name__}: {first_line})")
