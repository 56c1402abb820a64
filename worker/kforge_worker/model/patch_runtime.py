"""The code of patch.py, copied into it after its KERNELS and INSTALL (patch_writer.py): apply() swaps
a region's modules for its kernel; with ``custom_ops`` each kernel is called through a
torch.library custom op, so that torch.compile keeps it inside the compiled graph. This file is
not imported; it is text for patch.py, which needs no kforge."""

import copy
import linecache
import sys
import types
from typing import List

import torch

KERNELS: dict = {}  # patch.py defines them above this code
INSTALL: list = []
ROLES = (["block"], ["first", "second"])


def _kernel_module(name):
    module = types.ModuleType(f"kforge_region_{name.replace('-', '_')}")
    module.__file__ = f"<kforge {name}>"
    sys.modules[module.__name__] = module  # torch.compile looks modules up by name
    # The source under the module's name, as for a file: Triton's @jit reads its function's source
    # (inspect.getsourcelines), and tracebacks show the kernel's lines. No mtime: never evicted.
    source = KERNELS[name]
    linecache.cache[module.__file__] = (len(source), None, source.splitlines(True), module.__file__)
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def _set_submodule(model, path, new):
    if not path:  # the region is the model itself: its forward becomes the kernel's, in place
        model.add_module("kforge_kernel", new)
        model.forward = new.forward
        return
    parent_path, _, name = path.rpartition(".")
    parent = model.get_submodule(parent_path) if parent_path else model
    setattr(parent, name, new) if not name.isdigit() else parent.__setitem__(int(name), new)


def _device_of(module):
    for t in list(module.parameters()) + list(module.buffers()):
        return t.device
    return torch.device("cpu")


# Custom ops. The real implementation calls the installed kernel (by its index in _INSTALLED); the
# fake one runs the PyTorch modules the kernel replaced on fake tensors, so the compiler learns the
# output's shape and dtype without running candidate code.
_INSTALLED = []  # (kernel, the replaced modules on the meta device), by index
_OPS = {}


def _op(region):
    if region not in _OPS:
        name = f"kforge::{region.replace('-', '_')}_{id(_INSTALLED):x}"  # unique per loaded patch.py

        @torch.library.custom_op(name, mutates_args=())
        def run(xs: List[torch.Tensor], index: int) -> torch.Tensor:
            out = _INSTALLED[index][0](*xs)
            # An op's output may not alias its inputs.
            return out.clone() if any(x.numel() and out.data_ptr() == x.data_ptr() for x in xs) else out

        @run.register_fake
        def _(xs, index):
            original = _INSTALLED[index][1]
            device = xs[0].device if xs else torch.device("cpu")
            fake = {n: torch.empty(t.shape, dtype=t.dtype, device=device)
                    for n, t in list(original.named_parameters()) + list(original.named_buffers())}
            return torch.func.functional_call(original, fake, tuple(xs)).clone()

        _OPS[region] = run
    return _OPS[region]


class KernelAsOp(torch.nn.Module):
    """A region's kernel behind its custom op: one opaque call in a compiled graph."""

    def __init__(self, region, kernel, originals):
        super().__init__()
        self.kernel = kernel
        self.index = len(_INSTALLED)
        self.op = _op(region)
        shape_of = originals[0] if len(originals) == 1 else torch.nn.Sequential(*originals)
        _INSTALLED.append((kernel, copy.deepcopy(shape_of).to("meta")))

    def forward(self, *args):
        if not all(isinstance(a, torch.Tensor) for a in args):
            return self.kernel(*args)  # an op takes tensors; compiled, this traces into the kernel
        return self.op(list(args), self.index)


# Regions called with keyword arguments (kforge_worker/model/call_layout.py): the kernel takes the
# call's tensors in the layout's order and returns the output's tensors; a call that does not fit the
# layout (a decode step that passes a KV cache) goes to the original module.
def _flatten(leaf, value, tensors):
    if "input" in leaf:
        if not isinstance(value, torch.Tensor):
            return False
        if leaf["input"] in tensors:  # one input in several places: the call must pass one tensor there
            return tensors[leaf["input"]] is value
        tensors[leaf["input"]] = value
        return True
    if "const" in leaf:
        c = leaf["const"]
        return value is None if c is None else (type(value) is type(c) and value == c)
    items = leaf.get("tuple", leaf.get("list"))
    if not isinstance(value, (tuple, list)) or len(value) != len(items):
        return False
    return all(_flatten(v_leaf, v, tensors) for v_leaf, v in zip(items, value))


def _rebuild(leaf, tensors):
    if "input" in leaf:
        return tensors[leaf["input"]]
    if "const" in leaf:
        return leaf["const"]
    values = [_rebuild(v, tensors) for v in leaf.get("tuple", leaf.get("list"))]
    return tuple(values) if "tuple" in leaf else values


class ProblemForm(torch.nn.Module):
    """The original module called the way the region's problem calls it: positional tensors in,
    the output's tensors out (the fake implementation of a custom op runs this)."""

    def __init__(self, block, call):
        super().__init__()
        self.block = block
        self.call = call

    def forward(self, *xs):
        layout = self.call["layout"]
        out = self.block(*[_rebuild(a, xs) for a in layout["args"]],
                         **{k: _rebuild(v, xs) for k, v in layout["kwargs"].items()})
        leaves = []
        _flatten(self.call["output"], out, _Collect(leaves))
        return leaves[0] if len(leaves) == 1 else tuple(leaves)


class _Collect(dict):
    def __init__(self, into):
        super().__init__()
        self.into = into

    def __setitem__(self, key, value):
        self.into.append(value)


class CallAdapter(torch.nn.Module):
    """The model's call of a region (keyword arguments and all) turned into its kernel's inputs."""

    def __init__(self, kernel, original, call):
        super().__init__()
        self.kernel = kernel
        self.original = original
        self.call = call

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            # The model may read the replaced module's attributes around the call (the encoder
            # layer reads its self_attn.batch_first): they are the original's.
            original = self.__dict__.get("_modules", {}).get("original")
            if original is None:
                raise
            return getattr(original, name)

    def forward(self, *args, **kwargs):
        layout = self.call["layout"]
        tensors = {}
        fits = (len(args) == len(layout["args"]) and set(kwargs) == set(layout["kwargs"])
                and all(_flatten(leaf, a, tensors) for leaf, a in zip(layout["args"], args))
                and all(_flatten(leaf, kwargs[k], tensors) for k, leaf in layout["kwargs"].items()))
        if not fits:
            return self.original(*args, **kwargs)
        out = self.kernel(*[tensors[i] for i in range(len(tensors))])
        return _rebuild(self.call["output"], list(out) if isinstance(out, (tuple, list)) else [out])


def _outputs(leaf):
    """How many tensors an output layout holds."""
    if "input" in leaf:
        return 1
    return sum(_outputs(v) for v in leaf.get("tuple", leaf.get("list", [])))


def apply(model, regions=None, custom_ops=False):
    """Installs the kernels of ``regions`` (names; all when None) into ``model``; returns it. With
    ``custom_ops``, each kernel is a torch.library custom op, so ``torch.compile(model)`` compiles
    the rest of the model around the kernels."""
    for item in INSTALL:
        if regions is not None and item["region"] not in regions:
            continue
        module = _kernel_module(item["region"])
        for paths in item["instances"]:
            originals = [model.get_submodule(p) for p in paths]
            state = {}
            for role, original in zip(ROLES[len(paths) - 1], originals):
                state.update({f"{role}.{k}": v for k, v in original.state_dict().items()})
            new = module.ModelNew(*item.get("init_inputs", []))
            own = new.state_dict()
            with torch.no_grad():
                for k, v in own.items():
                    if k in state and state[k].shape == v.shape:
                        v.copy_(state[k])
            new = new.to(_device_of(originals[0])).train(originals[0].training)
            call = item.get("call")
            if custom_ops and (call is None or _outputs(call["output"]) == 1):
                new = KernelAsOp(item["region"], new, [ProblemForm(originals[0], call)] if call else originals)
            if call:
                new = CallAdapter(new, originals[0], call)
            _set_submodule(model, paths[0], new)
            for p in paths[1:]:
                _set_submodule(model, p, torch.nn.Identity())
    return model
