"""patch.py: the regions' kernels as one standalone file with ``apply(model)``, which swaps each
region's modules in the user's model for the region's kernel (the first module becomes the kernel,
loaded with that module's own weights; the second of a fused pair becomes an identity). Like best.py
it needs no kforge: each kernel is its run's standalone best.py, embedded, and the kernel libraries
those import are copied beside it as ``kforge_kernels/``."""

import json
import shutil
from pathlib import Path
from typing import List

_TEMPLATE = '''"""kforge model: {count} region kernel(s) for {model}.

    import patch
    model = patch.apply(model)          # every region below
    model = patch.apply(model, ["region-1"])

Each region's kernel replaces the region's modules in place (module substitution), with the weights
of the modules it replaces; a region's second module (a fused epilogue) becomes an identity.
Regions: {names}."""

import os
import sys
import types

import torch

# The kernels import kforge's kernel libraries, copied beside this file (kforge_kernels/).
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

KERNELS = {kernels}

INSTALL = {install}

ROLES = (["block"], ["first", "second"])


def _kernel_module(name):
    module = types.ModuleType(f"kforge_region_{{name.replace('-', '_')}}")
    module.__file__ = f"<kforge {{name}}>"
    exec(compile(KERNELS[name], module.__file__, "exec"), module.__dict__)
    return module


def _set_submodule(model, path, new):
    parent_path, _, name = path.rpartition(".")
    parent = model.get_submodule(parent_path) if parent_path else model
    setattr(parent, name, new) if not name.isdigit() else parent.__setitem__(int(name), new)


def _device_of(module):
    for t in list(module.parameters()) + list(module.buffers()):
        return t.device
    return torch.device("cpu")


def apply(model, regions=None):
    """Installs the kernels of ``regions`` (names; all when None) into ``model``; returns it."""
    for item in INSTALL:
        if regions is not None and item["region"] not in regions:
            continue
        module = _kernel_module(item["region"])
        for paths in item["instances"]:
            originals = [model.get_submodule(p) for p in paths]
            state = {{}}
            for role, original in zip(ROLES[len(paths) - 1], originals):
                state.update({{f"{{role}}.{{k}}": v for k, v in original.state_dict().items()}})
            new = module.ModelNew(*item.get("init_inputs", []))
            own = new.state_dict()
            with torch.no_grad():
                for k, v in own.items():
                    if k in state and state[k].shape == v.shape:
                        v.copy_(state[k])
            new = new.to(_device_of(originals[0])).train(originals[0].training)
            _set_submodule(model, paths[0], new)
            for p in paths[1:]:
                _set_submodule(model, p, torch.nn.Identity())
    return model
'''


def write(path: str, model_name: str, regions: List[dict]) -> None:
    """``regions``: [{"region": name, "instances": [[path, ...], ...], "source": standalone kernel}]."""
    kernels = "{\n" + "".join(f"    {r['region']!r}: {r['source']!r},\n" for r in regions) + "}"
    install = json.dumps([{"region": r["region"], "instances": r["instances"]} for r in regions], indent=4)
    libraries = Path(__file__).resolve().parents[2] / "kforge_kernels"
    beside = Path(path).parent / "kforge_kernels"
    shutil.rmtree(beside, ignore_errors=True)
    shutil.copytree(libraries, beside, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    with open(path, "w") as f:
        f.write(_TEMPLATE.format(count=len(regions), model=model_name, kernels=kernels, install=install,
                                 names=", ".join(r["region"] for r in regions) or "none"))
