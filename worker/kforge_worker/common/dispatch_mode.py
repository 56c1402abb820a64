"""Dispatch modes that leave torch._dynamo unimported until compiled code can run.

torch wraps every TorchDispatchMode subclass's ``__torch_dispatch__`` in ``torch._dynamo.disable``,
which imports all of dynamo (about a second of CPU) on the first operator. That guard only matters
where compiled code can run, and none can before torch._dynamo is imported. The operator recorder
and the FLOP counter are such modes; ``make`` gives them the guard only once dynamo is loaded.
"""

import sys

from torch.utils._python_dispatch import TorchDispatchMode


class LightDispatchMode(TorchDispatchMode):
    """A dispatch mode without torch's dynamo guard; instantiate subclasses through ``make``."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


_guarded = {}


def make(cls, *args):
    """An instance of ``cls`` (a LightDispatchMode subclass); once torch._dynamo is loaded (torch.compile
    in use), of a subclass that has torch's guard, so dynamo never traces the mode itself."""
    if "torch._dynamo" not in sys.modules:
        return cls(*args)
    if cls not in _guarded:
        # Re-stating __torch_dispatch__ in the subclass lets TorchDispatchMode.__init_subclass__ wrap it.
        _guarded[cls] = type(f"_CompileSafe{cls.__name__.lstrip('_')}", (cls,),
                             {"_should_skip_dynamo": classmethod(lambda c: True),
                              "__torch_dispatch__": cls.__torch_dispatch__})
    return _guarded[cls](*args)
