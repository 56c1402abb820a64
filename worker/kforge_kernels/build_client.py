"""The candidate's side of the build channel: asks kforge's trusted builder for a library.

Inside the sandbox the shared build cache is read-only. A helper (native, load_inline) that misses
the cache sends the source and flags over the channel kforge gave the worker (fd ``$KFORGE_BUILD_FD``,
a socket); kforge builds outside the sandbox (kforge_worker.builder.sandboxed_build) and answers with the
cache path of the result, or the compiler's error and log.
"""

import json
import os
import socket
import threading

_lock = threading.Lock()
_channel = []  # the socket, opened on first use


def available() -> bool:
    return bool(os.environ.get("KFORGE_BUILD_FD"))


def request(req: dict) -> dict:
    """Sends one build request and waits for its answer (builds run one at a time per worker)."""
    with _lock:
        if not _channel:
            _channel.append(socket.socket(fileno=int(os.environ["KFORGE_BUILD_FD"])))
        sock = _channel[0]
        sock.sendall(json.dumps(req).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            if not chunk:
                return {"ok": False, "error": "kforge closed the build channel", "log": ""}
            data += chunk
    return json.loads(data)
