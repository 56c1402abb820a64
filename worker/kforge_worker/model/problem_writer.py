"""A region written as a KernelBench problem: ``Model`` (the region's modules, rebuilt from their
classes and attributes, with the model's own weights loaded from a file beside the problem),
``get_inputs`` (the region's real shapes and dtypes) and ``get_init_inputs`` (none). ``kforge eval``,
``run`` and ``bench`` take the file unchanged; the weights file keeps the region's values exact (a
causal mask is a buffer whose values matter), and the harness copies them into a candidate's
same-named weights as it does for every problem."""

import ast
import math
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional

import torch

from kforge_worker.model import call_layout
from kforge_worker.model.regions import Region

_MODULE_INTERNALS = set(vars(torch.nn.Module()))
USER_MODULE = "kforge_user_model"  # the name loading.py gives the model file's module
ENTRY_POINTS = {"Model", "get_inputs", "get_init_inputs", "get_model"}
ROLE_NAMES = (["block"], ["first", "second"])  # the region Model's attribute names for its modules
# The model file's own `Model`, where it is the region (the model itself): renamed in the copied
# definitions, since the problem's `Model` wraps it.
SOURCE_MODEL = "SourceModel"


class RegionError(Exception):
    """This region cannot be written as a problem (the reason is reported; the other regions go on)."""


def literal(value, other: Optional[Callable[[object], Optional[str]]] = None) -> str:
    """Python source for a plain attribute value; RegionError for anything a file cannot hold.
    ``other`` gives the source of values that are not plain (None where it cannot)."""
    if other is not None and (code := other(value)) is not None:
        return code
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    if isinstance(value, tuple):
        return "(" + "".join(literal(v, other) + ", " for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v, other) for v in value) + "]"
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return "{" + ", ".join(f"{k!r}: {literal(v, other)}" for k, v in value.items()) + "}"
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    raise RegionError(f"a {type(value).__name__} attribute cannot be written into a problem file")


def is_hf_config(value) -> bool:
    """A Hugging Face model config (modules of transformers models keep theirs as ``self.config``)."""
    return any(c.__name__.lower() == "pretrainedconfig" and c.__module__.startswith("transformers.")
               for c in type(value).__mro__)


def hf_config_code(config, imports: set) -> str:
    """The config rebuilt from the values that differ from its class's defaults, with the attention
    implementation the model ran with (a private attribute that to_dict leaves out)."""
    values = {k: v for k, v in config.to_diff_dict().items() if k != "transformers_version"}
    return f"_hf_config({class_ref(type(config), imports)}, {literal(values)}, {getattr(config, '_attn_implementation', None)!r})"


def class_ref(cls, imports: set) -> str:
    if cls.__module__ == USER_MODULE:
        if cls.__name__ == "Model" and cls.__qualname__ == "Model":
            return SOURCE_MODEL
        if cls.__name__ in ENTRY_POINTS or cls.__qualname__ != cls.__name__:
            raise RegionError(f"class {cls.__qualname__} of the model file cannot be named in a problem file")
        return cls.__name__
    imports.add(cls.__module__)
    return f"{cls.__module__}.{cls.__qualname__}"


def stateless_module_code(value, home: str, imports: set) -> Optional[str]:
    """A module kept in a plain attribute (not a submodule) that holds no state of its own, such as
    the per-instance kernel wrappers of transformers' `kernels` integration (``_kernel_funcs``):
    rebuilt as a fresh instance of its class. Such classes are made inside a function, so the class
    is named through a global of the owner's module (``home``) that is an instance of it."""
    if not isinstance(value, torch.nn.Module) or set(vars(value)) - _MODULE_INTERNALS:
        return None
    if value._parameters or value._buffers or value._modules:
        return None
    cls = type(value)
    if "<locals>" not in cls.__qualname__:
        return f"{class_ref(cls, imports)}()"
    namespace = vars(sys.modules.get(home) or object())
    name = next((k for k, v in namespace.items() if type(v) is cls), None)
    if name is None:
        return None
    if home == USER_MODULE:  # the model file's definitions are copied into the problem file
        return f"type({name})()"
    imports.add(home)
    return f"type({home}.{name})()"


def module_code(module: torch.nn.Module, imports: set, where: str, indent: int = 8) -> str:
    """An expression that rebuilds ``module``: its class without calling its constructor, its plain
    attributes, empty weights of the right shapes and dtypes (the weights file fills them), and its
    submodules."""
    cls = class_ref(type(module), imports)
    attrs = []
    for key, value in vars(module).items():
        if key in _MODULE_INTERNALS:
            continue
        try:
            stateless = lambda v: stateless_module_code(v, type(module).__module__, imports)  # noqa: E731
            attrs.append(f"{key!r}: {hf_config_code(value, imports) if is_hf_config(value) else literal(value, stateless)}")
        except RegionError as e:
            raise RegionError(f"{where or 'the module'}.{key}: {e}") from None
    # A weight that is None (Linear(bias=False)'s bias) is kept as None: forward reads it.
    params = ", ".join(f"{k!r}: None" if p is None else f"{k!r}: ({tuple(p.shape)!r}, {p.dtype}, {p.requires_grad!r})"
                       for k, p in module._parameters.items())
    buffers = ", ".join(f"{k!r}: ({tuple(b.shape)!r}, {b.dtype}, {k not in module._non_persistent_buffers_set!r})"
                        for k, b in module._buffers.items() if b is not None)
    pad = " " * (indent + 4)
    children = [f"{pad}{k!r}: {module_code(c, imports, f'{where}.{k}', indent + 4)}" for k, c in module._modules.items()
                if c is not None]
    nested = "{\n" + ",\n".join(children) + "\n" + " " * indent + "}" if children else "{}"
    return f"_module({cls}, {{{', '.join(attrs)}}}, {{{params}}}, {{{buffers}}}, {nested})"


class _RenameModel(ast.NodeTransformer):
    """`Model` becomes SOURCE_MODEL: its class and every name that refers to it (`super(Model, self)`)."""

    def visit_ClassDef(self, node):
        self.generic_visit(node)
        if node.name == "Model":
            node.name = SOURCE_MODEL
        return node

    def visit_Name(self, node):
        if node.id == "Model":
            node.id = SOURCE_MODEL
        return node


def user_code(source: str, with_model: bool = False) -> str:
    """The model file's imports, classes, functions and literal assignments (as it ran, --set values
    applied), without its entry points or anything else it runs at import; ``with_model`` (the region
    is the model itself): its `Model` too, as SOURCE_MODEL."""
    tree = ast.parse(source)
    if with_model:
        if any(isinstance(n, ast.ClassDef) and n.name == SOURCE_MODEL for n in tree.body):
            raise RegionError(f"the model file defines {SOURCE_MODEL}, the name its Model takes in a problem file")
        tree = _RenameModel().visit(tree)
    kept = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            kept.append(node)
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name not in ENTRY_POINTS:
            kept.append(node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                ast.literal_eval(node.value)
            except ValueError:
                continue
            kept.append(node)
    return "\n\n".join(ast.unparse(n) for n in kept)


def input_code(spec: dict) -> str:
    if not spec["tensor"]:
        return literal(spec["value"])
    shape, dtype = tuple(spec["shape"]), f"torch.{spec['dtype']}"
    if spec["dtype"] == "bool":
        return f"torch.rand({shape!r}) > 0.5"
    if "low" in spec:
        return f"torch.randint({spec['low']}, {spec['high'] + 1}, {shape!r}, dtype={dtype})"
    return f"torch.randn({shape!r}, dtype={dtype})"


_HEADER = '''"""Region {index} of {model}: {kind} ({paths}), {calls} call(s) per forward, {share:.1%} of the
model's eager time. Written by `kforge model`: the KernelBench format, so `kforge eval`, `run` and
`bench` take it as it is. The region's weights are the model's own, loaded from {weights} beside
this file."""
'''

_HF_CONFIG = '''

def _hf_config(cls, values, attn_implementation):
    # A Hugging Face config: the values that differ from its class's defaults.
    config = cls(**values)
    config._attn_implementation = attn_implementation
    return config
'''

_BUILDER = '''

def _module(cls, attrs, params, buffers, children):
    # Rebuilds a module of the model without its constructor; the weights file fills the weights.
    m = cls.__new__(cls)
    torch.nn.Module.__init__(m)
    for k, v in attrs.items():
        object.__setattr__(m, k, v)
    for k, spec in params.items():
        if spec is None:
            m.register_parameter(k, None)
            continue
        shape, dtype, grad = spec
        m.register_parameter(k, torch.nn.Parameter(torch.empty(shape, dtype=dtype), requires_grad=grad))
    for k, (shape, dtype, persistent) in buffers.items():
        m.register_buffer(k, torch.empty(shape, dtype=dtype), persistent=persistent)
    for k, c in children.items():
        m.add_module(k, c)
    return m


def _load_weights(model):
    values = torch.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), {weights!r}), weights_only=True)
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            t.copy_(values[name])
'''


def write(region: Region, index: int, model: torch.nn.Module, model_name: str, source: str, share: float,
          calls: int, out_dir: Path) -> Dict[str, str]:
    """Writes region-<index>.py and its weights; returns their paths. RegionError when it cannot.
    ``calls``: per forward, of every instance of the region (the file is written from the first)."""
    modules = dict(model.named_modules())
    call = region.calls[0] if region.calls else None
    if call is None:
        raise RegionError("the region never ran")
    if (call["kwargs"] or "layout" in call) and ("layout" not in call or "output" not in call or len(region.paths) > 1):
        why = call.get("layout_error") or "which a problem's get_inputs cannot give"
        how = f"keyword arguments ({', '.join(call['kwargs'])})" if call["kwargs"] else "one tensor in several arguments"
        raise RegionError(f"called with {how}: {why}")
    roles = ROLE_NAMES[len(region.paths) - 1]
    imports: set = set()
    built = {role: module_code(modules[p], imports, p) for role, p in zip(roles, region.paths)}
    stem = f"region-{index}"
    weights_name = f"{stem}.pt"
    weights = {}
    for role, p in zip(roles, region.paths):
        m = modules[p]
        for name, t in list(m.named_parameters()) + list(m.named_buffers()):
            weights[f"{role}.{name}"] = t.detach().cpu().clone()
    args = [f"x{i}" for i in range(len(call["specs"]))]
    body = f"self.block({', '.join(args)})" if len(roles) == 1 else f"self.second(self.first({', '.join(args)}))"
    if "layout" in call:  # keyword arguments or one tensor in several: the call rebuilt from the inputs
        paths = call_layout.tensor_paths(call["output"])
        if not paths:
            raise RegionError("its output holds no tensor")
        out = call_layout.call_source("self.block", call["layout"], args)
        body = out if paths == [""] else (f"{out}{paths[0]}" if len(paths) == 1 else
                                          f"out = {out}\n        return (" + ", ".join(f"out{p}" for p in paths) + ")")
    text = _HEADER.format(index=index, model=model_name, kind=region.kind, paths=" -> ".join(region.paths),
                          calls=calls, share=share, weights=weights_name)
    text += "import os\n\nimport torch\nimport torch.nn as nn\n"
    text += "".join(f"import {m}\n" for m in sorted(imports))
    text += "\n# The model file's definitions, as it ran.\n" + user_code(source, with_model=region.paths == [""]) + "\n"
    text += _BUILDER.format(weights=weights_name)
    if any("_hf_config(" in code for code in built.values()):
        text += _HF_CONFIG
    text += "\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    text += "".join(f"        self.{role} = {code}\n" for role, code in built.items())
    text += "        _load_weights(self)\n        self.train(False)  # as the model ran\n\n"
    text += f"    def forward(self, {', '.join(args)}):\n        {'' if body.startswith('out = ') else 'return '}{body}\n\n"
    text += "\ndef get_inputs():\n    return [" + ", ".join(input_code(s) for s in call["specs"]) + "]\n"
    text += "\n\ndef get_init_inputs():\n    return []\n"
    compile(text, stem + ".py", "exec")  # a generator bug shows here, not in the loop
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.py").write_text(text)
    torch.save(weights, out_dir / weights_name)
    return {"problem": str(out_dir / f"{stem}.py"), "weights": str(out_dir / weights_name)}
