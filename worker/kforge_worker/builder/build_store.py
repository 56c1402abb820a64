"""Keeps the shared build cache (the native libraries of $KFORGE_BUILD_CACHE/native and the load_inline
entries of $TORCH_EXTENSIONS_DIR) within a size budget.

Only kforge's builder writes the cache, once per library a candidate asked for: without a bound,
candidates that each ask for new libraries (up to the per-evaluation quota, build_broker.cc) fill the
disk over a long run. After it installed a library, the builder removes the least recently used
entries until the cache fits ``$KFORGE_BUILD_CACHE_MAX_GB`` (default 8). Candidates load entries
read-only, so use is what the file system records: an entry's access time (updated at least once a
day, and on the first read after a write) or its installation, whichever is later. An entry used in
the last ten minutes stays, since a candidate may be about to load it; one removed is built again
when a candidate next asks for it, never loaded half-removed (entries are renamed away first).
"""

import os
import shutil
import time

DEFAULT_MAX_GB = 8.0
IDLE_S = 600.0


def budget_bytes() -> int:
    try:
        gb = float(os.environ.get("KFORGE_BUILD_CACHE_MAX_GB", DEFAULT_MAX_GB))
    except ValueError:
        gb = DEFAULT_MAX_GB
    return int(max(gb, 0.0) * (1 << 30))


def _entries(native_root: str, inline_root: str):
    """(last use, path, bytes) of each entry: a native library (its .so) or a load_inline folder."""
    out = []
    for root, folders in ((native_root, False), (inline_root, True)):
        try:
            listing = list(os.scandir(root))
        except OSError:
            continue
        for entry in listing:
            if entry.name.startswith("."):
                continue  # being installed or evicted
            try:
                st = entry.stat(follow_symlinks=False)
                if folders and entry.is_dir(follow_symlinks=False):
                    files = [f.stat(follow_symlinks=False) for f in os.scandir(entry.path)
                             if f.is_file(follow_symlinks=False)]
                    used = max([st.st_mtime] + [max(f.st_atime, f.st_mtime) for f in files])
                    out.append((used, entry.path, sum(f.st_size for f in files)))
                elif not folders and entry.name.endswith(".so") and entry.is_file(follow_symlinks=False):
                    out.append((max(st.st_atime, st.st_mtime), entry.path, st.st_size))
            except OSError:
                continue
    return out


def size(native_root: str, inline_root: str) -> int:
    return sum(n for _, _, n in _entries(native_root, inline_root))


def evict(native_root: str, inline_root: str, budget: int, keep=(), now: float = None) -> list:
    """Removes the least recently used entries until the rest fit ``budget`` bytes, never those in
    ``keep`` (paths) nor any used in the last IDLE_S seconds. Returns the removed paths."""
    now = time.time() if now is None else now
    entries = _entries(native_root, inline_root)
    total = sum(n for _, _, n in entries)
    removed = []
    for used, path, n in sorted(entries):
        if total <= budget:
            break
        if path in keep or now - used < IDLE_S:
            continue
        doomed = os.path.join(os.path.dirname(path), f".evicted-{os.path.basename(path)}-{os.getpid()}")
        try:
            os.rename(path, doomed)
        except OSError:
            continue  # another builder's eviction took it
        if os.path.isdir(doomed):
            shutil.rmtree(doomed, ignore_errors=True)
        else:
            os.unlink(doomed)
        total -= n
        removed.append(path)
    return removed
