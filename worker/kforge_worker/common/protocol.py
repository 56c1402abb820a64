"""The worker's command channel: one JSON object per line in (stdin), one per line out (a private fd).

Responses go to the file descriptor named by $KFORGE_RESPONSE_FD rather than stdout, so whatever the
candidate prints lands in the captured log and never mixes with replies. kforge pairs each reply
with its request by ``id``; everything a candidate process says is still treated as a claim to check.
"""

import json
import os
import sys
import time
import traceback
from typing import Callable, Dict, Optional


# Set: each command's timeline (here) and device memory (session.after_command) go to the worker's log.
COMMAND_LOG = "KFORGE_MEMORY_LOG"


def _open_response_channel():
    fd = int(os.environ.get("KFORGE_RESPONSE_FD", "3"))
    return os.fdopen(fd, "w", buffering=1, encoding="utf-8", closefd=False)


def serve(handlers: Dict[str, Callable[[dict], dict]], fallback: Optional[Callable[[dict], dict]] = None,
          after: Optional[Callable[[str, float, dict], None]] = None) -> None:
    """Reads commands until EOF or {"cmd": "exit"}; each handler returns the reply's payload.
    ``fallback`` answers commands without a handler (else they are an error); ``after(cmd, seconds,
    request)`` runs once each command's work is done (``seconds`` it took), before its reply goes out."""
    out = _open_response_channel()
    stdin = sys.stdin
    # Each command's moments on the system-wide monotonic clock, to line both workers' logs up
    # (bench/memlog.py --timeline): what lies between commands shows up as gaps.
    timeline = bool(os.environ.get(COMMAND_LOG))
    for line in stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        rid = request.get("id")
        cmd = request.get("cmd")
        if cmd in ("exit", "ping"):  # ping: kforge times a no-op round trip (the machine's delay)
            out.write(json.dumps({"id": rid, "cmd": cmd, "ok": True}) + "\n")
            out.flush()
            if cmd == "exit":
                return
            continue
        handler = handlers.get(cmd, fallback)
        received = time.monotonic()
        started = time.perf_counter()
        try:
            if handler is None:
                raise ValueError(f"unknown command {cmd!r}")
            reply = handler(request)
            reply.setdefault("ok", True)
        except Exception as exc:  # every failure becomes a reply; kforge decides what it means
            reply = error_reply(exc)
        handled = time.monotonic()
        if after is not None:
            try:
                after(cmd, time.perf_counter() - started, request)
            except Exception as exc:  # housekeeping that fails (a broken CUDA context) is the command's failure
                reply = error_reply(exc) if reply.get("ok") else reply
        released = time.monotonic()
        reply["id"] = rid
        reply["cmd"] = cmd  # kforge checks that a reply answers the command it asked (src/eval/candidate_replies.h)
        out.write(json.dumps(_finite(reply), default=_json_default, allow_nan=False) + "\n")
        out.flush()
        if timeline:
            print(f"kforge timeline: {cmd} received {received:.6f} handled {handled:.6f} released {released:.6f} "
                  f"replied {time.monotonic():.6f}", file=sys.stderr, flush=True)


def error_reply(exc: BaseException, kind: str = "runtime_error") -> dict:
    from kforge_kernels.errors import is_toolchain_build_error
    from kforge_worker.common import gpu_errors
    from kforge_worker.common.errors import CompileError, EnvironmentProblem, OverrideError, ProblemError

    log = ""
    if isinstance(exc, EnvironmentProblem):
        kind = "environment_error"
    elif isinstance(exc, CompileError):
        kind, log = "compile_error", exc.log
    elif isinstance(exc, ProblemError):
        kind = "problem_error"
    elif isinstance(exc, SyntaxError):
        kind, log = "compile_error", "".join(traceback.format_exception_only(exc))
    elif is_toolchain_build_error(exc):
        kind, log = "compile_error", str(exc)
    elif _is_oom(exc):
        kind = "device_oom"
    message = f"{type(exc).__name__}: {exc}"
    gpu_kind = gpu_errors.classify(exc) if kind == "runtime_error" or kind == "device_oom" else None
    if gpu_kind:
        kind = gpu_kind
        first, _, rest = message.partition("\n")
        message = f"{first} ({gpu_errors.hint(gpu_kind)})" + (f"\n{rest}" if rest else "")
    return {
        "ok": False,
        "error": {
            "kind": kind,
            "message": message[:4000],
            "log": log,
            # A --set mistake is the user's input, not a fault in the worker's code or the problem's.
            "traceback": "" if isinstance(exc, OverrideError) else "".join(traceback.format_exception(exc))[-8000:],
        },
    }


def _is_oom(exc: BaseException) -> bool:
    # On the CPU the host is the device: torch's allocator fails with a RuntimeError when the
    # process reaches its address-space limit (the target's address_space_gb) or the host is full.
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" or (
        isinstance(exc, RuntimeError) and "DefaultCPUAllocator: can't allocate memory" in str(exc))


def _finite(value):
    """JSON has no NaN or Infinity: such floats travel as the strings "nan", "inf", "-inf"."""
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    return str(value)
