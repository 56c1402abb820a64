"""What the harness needs to know about a device kind, one module per kind behind one interface.

A problem runs on a device named as torch names it (``cpu``, ``cuda``, ``cuda:1``); its kind is the
part before the colon. Each back-end module provides:

    model_name(device) -> str          the processor or GPU model, for cache keys and reports
    measure_peaks(device) -> dict      measured bandwidth levels and matmul throughput per dtype
    theoretical_bounds(device) -> dict the most the hardware could do (peak_bounds), to check those against

sol.py calls them; it names no device kind itself. A ROCm build of torch calls AMD GPUs ``cuda``, so
the ``cuda`` module serves both vendors. The facts they are made from live here too: peak_bounds (what
the hardware could do, from its description) and cpu_facts (a CPU's vector instruction sets and caches).

May import: common.
"""

from types import ModuleType

from kforge_worker.backends import cpu, cuda

_BY_KIND = {"cpu": cpu, "cuda": cuda}


def kind_of(device: str) -> str:
    return device.split(":")[0]


def for_device(device: str) -> ModuleType:
    """The back end for ``device``; a ValueError naming the known kinds for any other."""
    try:
        return _BY_KIND[kind_of(device)]
    except KeyError:
        raise ValueError(f"no back end for device '{device}' (known kinds: {', '.join(sorted(_BY_KIND))})") from None
