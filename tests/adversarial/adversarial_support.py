"""What the adversarial tests share: their problem files and the sizes some cheats are judged at (the
`kforge` fixture is the end-to-end one).

A module of its own (not conftest.py): the end-to-end suite has a conftest.py too, and tests that
imported `conftest` got whichever was loaded first."""

from pathlib import Path

HERE = Path(__file__).resolve().parent


def problem(name: str) -> Path:
    return HERE / "problems" / f"{name}.py"


# `kforge eval` flags for cheats judged at other sizes than their problem's own. A content cache's
# miss (its own 512x512 matmul, ~3 ms) is over 100x its hit (~0.02 ms); at 256 it was 20x, only twice
# the cached-results rule's 10x, which a loaded machine must not erase. The caches written against
# that rule are also judged against the median timed call, which load stretches to 0.2 ms (a 512 miss
# was 11 to 14x that under 2 busy loops on 2 cores): they multiply 768x768 matrices.
CHEAT_SIZES = {"content_cache_hidden": ["--set", "n=512"],
               "content_cache_aged": ["--set", "n=768"],
               "content_cache_jittered": ["--set", "n=768"]}
