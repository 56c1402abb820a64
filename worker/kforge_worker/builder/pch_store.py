"""Keeps kforge's precompiled headers ($KFORGE_PCH_DIR, build_pch) within a size budget.

Each flag set's headers take about 1.2 GB, and a candidate that adds a flag of its own (a ``-D``)
makes a new set: without a bound, a long refinement run fills the disk. kforge's builder marks the
headers a build used (the folder's modification time) and, after it made new ones, removes the
least recently used sets until the store fits ``$KFORGE_PCH_MAX_GB`` (default 8). A set used in the
last ten minutes stays, since a build may be reading it: a build whose header goes away while it
compiles fails its lighter attempt and is built as written, never wrongly.
"""

import os
import re
import shutil
import time

DEFAULT_MAX_GB = 8.0
IDLE_S = 600.0
_HEADER_FOLDER = re.compile(r"^[0-9a-f]{24}$")  # build_pch.key's names; lean_aten's folders are not counted


def budget_bytes() -> int:
    try:
        gb = float(os.environ.get("KFORGE_PCH_MAX_GB", DEFAULT_MAX_GB))
    except ValueError:
        gb = DEFAULT_MAX_GB
    return int(max(gb, 0.0) * (1 << 30))


def mark_used(base: str, keys) -> None:
    """Records that a build used these headers now."""
    for key in keys:
        try:
            os.utime(os.path.join(base, key))
        except OSError:
            pass  # removed meanwhile: the next build of those flags makes it again


def _size(folder: str) -> int:
    total = 0
    for entry in os.scandir(folder):
        if entry.is_file(follow_symlinks=False):
            total += entry.stat(follow_symlinks=False).st_size
    return total


def evict(base: str, budget: int, keep=(), now: float = None) -> list:
    """Removes the least recently used header folders of ``base`` until the rest fit ``budget``
    bytes, never those in ``keep`` nor any used in the last IDLE_S seconds. Returns the removed names."""
    now = time.time() if now is None else now
    folders = []
    for entry in os.scandir(base):
        if _HEADER_FOLDER.match(entry.name) and entry.is_dir(follow_symlinks=False):
            folders.append((entry.stat(follow_symlinks=False).st_mtime, entry.name, _size(entry.path)))
    total = sum(size for _, _, size in folders)
    removed = []
    for mtime, name, size in sorted(folders):
        if total <= budget:
            break
        if name in keep or now - mtime < IDLE_S:
            continue
        # Renamed first, so that no later lookup finds a half-removed folder.
        doomed = os.path.join(base, f".evicted-{name}-{os.getpid()}")
        try:
            os.rename(os.path.join(base, name), doomed)
        except OSError:
            continue  # another builder's eviction took it
        shutil.rmtree(doomed, ignore_errors=True)
        total -= size
        removed.append(name)
    return removed
