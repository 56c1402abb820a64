"""Build events recorded by the compile helpers, reported back with the candidate's load result."""

import threading

_lock = threading.Lock()
_events: list = []


def record(path: str, key: str, cache_hit: bool, seconds: float, **extra) -> None:
    """Records one build: ``path`` names the compile path (e.g. "native", "opencl", "load_inline")."""
    with _lock:
        _events.append({"path": path, "key": key, "cache_hit": cache_hit, "seconds": round(seconds, 4), **extra})


def events() -> list:
    with _lock:
        return list(_events)


def forget() -> None:
    """Drops the events so far: what a worker built for its own checks is not the candidate's."""
    with _lock:
        _events.clear()
