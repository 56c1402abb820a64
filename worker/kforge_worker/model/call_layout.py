"""A region called with keyword arguments (a decoder's attention: hidden states, position embeddings as
a tuple, a mask, no cache) as a problem's positional inputs, and back.

The layout of a call says where each tensor goes (``{"input": i}``, the problem's i-th input) and
which values are constants (``{"const": v}``: None, a bool, a number, a string), through tuples and
lists; the layout of its output says which of its leaves are tensors (the problem returns those)
and which are constants (an attention's ``None`` weights). The problem file rebuilds the call from
its inputs, and patch.py turns the model's call into the kernel's inputs (and calls the original
module when a call does not fit the layout, such as a decode step that passes a KV cache)."""

from typing import List, Tuple

import torch

CONSTANTS = (type(None), bool, int, float, str)


class LayoutError(Exception):
    """A value that is neither a tensor, a constant nor a tuple or list of those."""


def _leaf(value, tensors: list, where: str):
    if isinstance(value, torch.Tensor):
        # One tensor passed twice (an encoder layer's self-attention: query, key and value) is one
        # input: a kernel may rely on it, and patch.py then uses the kernel only where it holds.
        for i, seen in enumerate(tensors):
            if seen is value:
                return {"input": i}
        tensors.append(value)
        return {"input": len(tensors) - 1}
    if isinstance(value, CONSTANTS):
        return {"const": value}
    if isinstance(value, (tuple, list)):
        return {type(value).__name__: [_leaf(v, tensors, f"{where}[{i}]") for i, v in enumerate(value)]}
    raise LayoutError(f"{where} is a {type(value).__name__}, which a problem's get_inputs cannot give")


def aliased(args: tuple) -> bool:
    """Whether one tensor is among ``args`` twice."""
    ids = [id(a) for a in args if isinstance(a, torch.Tensor)]
    return len(set(ids)) < len(ids)


def of_call(args: tuple, kwargs: dict) -> Tuple[dict, List[torch.Tensor]]:
    """(layout, the tensors in input order); LayoutError for a value of another kind."""
    tensors: list = []
    layout = {"args": [_leaf(a, tensors, f"argument {i}") for i, a in enumerate(args)],
              "kwargs": {k: _leaf(v, tensors, f"keyword argument {k}") for k, v in sorted(kwargs.items())}}
    return layout, tensors


def of_output(output):
    """The output's layout: tensors as {"input": i} (their order among the problem's outputs)."""
    return _leaf(output, [], "the output")


def expression(leaf, names: List[str]) -> str:
    """Python source for a leaf, with names[i] for the i-th tensor (for the problem file)."""
    if "input" in leaf:
        return names[leaf["input"]]
    if "const" in leaf:
        return repr(leaf["const"])
    items = leaf.get("tuple", leaf.get("list"))
    inner = ", ".join(expression(v, names) for v in items)
    return f"({inner}{',' if len(items) == 1 else ''})" if "tuple" in leaf else f"[{inner}]"


def call_source(callee: str, layout: dict, names: List[str]) -> str:
    parts = [expression(a, names) for a in layout["args"]] + [f"{k}={expression(v, names)}" for k, v in layout["kwargs"].items()]
    return f"{callee}({', '.join(parts)})"


def tensor_paths(leaf, path: str = "") -> List[str]:
    """Index expressions (``[0]``, ``[1][0]``) of the tensors in an output layout, in order."""
    if "input" in leaf:
        return [path]
    items = leaf.get("tuple", leaf.get("list"))
    if items is None:
        return []
    return [p for i, v in enumerate(items) for p in tensor_paths(v, f"{path}[{i}]")]
