"""Loading a user's model file: ``get_model()`` and ``get_inputs()``, or a KernelBench problem through
``Model``, ``get_init_inputs()`` and ``get_inputs()``. Module-level sizes take ``--set`` overrides the
way problems do (kforge_worker.common.problem)."""

from pathlib import Path
from typing import Dict, List, Tuple

import torch

from kforge_worker.common import problem
from kforge_worker.common.errors import ProblemError


class ModelFileError(ProblemError):
    """The model file cannot give a model and its inputs."""


def load_model_module(path: str, overrides: Dict[str, object]):
    if not Path(path).is_file():
        raise ModelFileError(f"model file not found: {path}")
    try:
        return problem.load_module(path, "kforge_user_model", overrides)
    except ProblemError:
        raise
    except Exception as e:  # the user's code raised while it was imported
        raise ModelFileError(f"{Path(path).name} raised {type(e).__name__} when imported: {e}") from e


def build(module, path: str) -> Tuple[torch.nn.Module, List[object], str]:
    """The model in eval mode, its inputs, and which entry points gave them."""
    name = Path(path).name
    if not hasattr(module, "get_inputs"):
        raise ModelFileError(f"{name} defines no get_inputs() (a model file needs get_model() and get_inputs(), "
                             "or a KernelBench problem's Model, get_init_inputs() and get_inputs())")
    if hasattr(module, "get_model"):
        entry, make = "get_model()", module.get_model
    elif hasattr(module, "Model"):
        init = module.get_init_inputs() if hasattr(module, "get_init_inputs") else []
        entry, make = "Model(*get_init_inputs())", lambda: module.Model(*init)
    else:
        raise ModelFileError(f"{name} defines no get_model() (a model file needs get_model() and get_inputs(), "
                             "or a KernelBench problem's Model, get_init_inputs() and get_inputs())")
    try:
        model = make()
    except Exception as e:
        raise ModelFileError(f"{name}: {entry} raised {type(e).__name__}: {e}") from e
    if not isinstance(model, torch.nn.Module):
        raise ModelFileError(f"{name}: {entry} returned {type(model).__name__}, not a torch.nn.Module")
    try:
        inputs = list(module.get_inputs())
    except Exception as e:
        raise ModelFileError(f"{name}: get_inputs() raised {type(e).__name__}: {e}") from e
    return model.eval(), inputs, entry


def to_device(value, device: str):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def load(path: str, overrides: Dict[str, object], device: str = "cpu", seed: int = 0):
    """(module, model, inputs, entry) with the model and inputs on ``device``; seeded so that two
    loads give the same weights and inputs."""
    module = load_model_module(path, overrides)
    torch.manual_seed(seed)
    model, inputs, entry = build(module, path)
    try:
        model = model.to(device)
    except Exception as e:
        raise ModelFileError(f"the model does not move to {device}: {type(e).__name__}: {e}") from e
    return module, model, to_device(inputs, device), entry
