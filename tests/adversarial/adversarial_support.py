"""What the adversarial tests share: their problem files (the `kforge` fixture is the end-to-end one).

A module of its own (not conftest.py): the end-to-end suite has a conftest.py too, and tests that
imported `conftest` got whichever was loaded first."""

from pathlib import Path

HERE = Path(__file__).resolve().parent


def problem(name: str) -> Path:
    return HERE / "problems" / f"{name}.py"
