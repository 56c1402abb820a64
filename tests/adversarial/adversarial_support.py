"""What the adversarial tests share: their problem files and the sizes some cheats are judged at (the
`kforge` fixture is the end-to-end one).

A module of its own (not conftest.py): the end-to-end suite has a conftest.py too, and tests that
imported `conftest` got whichever was loaded first."""

from pathlib import Path

HERE = Path(__file__).resolve().parent


def problem(name: str) -> Path:
    return HERE / "problems" / f"{name}.py"


# `kforge eval` flags for cheats judged at other sizes than their problem's own: a content cache's
# miss (its own 512x512 matmul, ~3 ms) is over 100x its hit (~0.02 ms); at 256 it was 20x, only
# twice the cached-results rule's 10x, which a loaded machine must not erase.
CHEAT_SIZES = {name: ["--set", "n=512"] for name in ("content_cache_hidden", "content_cache_aged", "content_cache_jittered")}
