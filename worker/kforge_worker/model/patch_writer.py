"""patch.py: the regions' kernels as one standalone file with ``apply(model)``, which swaps each
region's modules in the user's model for the region's kernel (the first module becomes the kernel,
loaded with that module's own weights; the second of a fused pair becomes an identity). Like best.py
it needs no kforge: each kernel is its run's standalone best.py, embedded, and the kernel libraries
those import are copied beside it as ``kforge_kernels/``. Its code is patch_runtime.py's."""

import pprint
import shutil
from pathlib import Path
from typing import List

_TEMPLATE = '''"""kforge model: {count} region kernel(s) for {model}.

    import patch
    model = patch.apply(model)          # every region below
    model = patch.apply(model, ["region-1"])
    model = torch.compile(patch.apply(model, custom_ops=True))  # the kernels as custom ops, compiled

Each region's kernel replaces the region's modules in place (module substitution), with the weights
of the modules it replaces; a region's second module (a fused epilogue) becomes an identity.
Regions: {names}."""

import os
import sys

import torch

# The kernels import kforge's kernel libraries, copied beside this file (kforge_kernels/).
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

KERNELS = {kernels}

INSTALL = {install}

'''


def write(path: str, model_name: str, regions: List[dict]) -> None:
    """``regions``: [{"region": name, "instances": [[path, ...], ...], "source": standalone kernel,
    "call": the call's layout when the region takes keyword arguments (call_layout.py)}]."""
    kernels = "{\n" + "".join(f"    {r['region']!r}: {r['source']!r},\n" for r in regions) + "}"
    # Python literals (a call's layout holds None and booleans), not JSON.
    install = pprint.pformat([{"region": r["region"], "instances": r["instances"], **({"call": r["call"]} if r.get("call") else {})}
                              for r in regions], width=110, sort_dicts=False)
    libraries = Path(__file__).resolve().parents[2] / "kforge_kernels"
    beside = Path(path).parent / "kforge_kernels"
    shutil.rmtree(beside, ignore_errors=True)
    shutil.copytree(libraries, beside, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    with open(path, "w") as f:
        f.write(_TEMPLATE.format(count=len(regions), model=model_name, kernels=kernels, install=install,
                                 names=", ".join(r["region"] for r in regions) or "none"))
        f.write(runtime_code())


def runtime_code() -> str:
    """patch_runtime.py without its docstring and its placeholders for KERNELS and INSTALL."""
    text = (Path(__file__).parent / "patch_runtime.py").read_text()
    body = text[text.index('"""', 3) + 3:]
    return "\n# The code (kforge_worker/model/patch_runtime.py).\n" + body.replace(
        "KERNELS: dict = {}  # patch.py defines them above this code\nINSTALL: list = []\n", "")
