"""A scripted model that crashes the run asking it, for tests of what survives a crashed run:

    --llm 'exec:python3 crash_on.py MARKER model.py PLAN.json LOG.jsonl'

A request whose last user message contains MARKER kills the `kforge run` that sent it (SIGKILL, its
nearest ancestor named kforge), as a crash would; every other request is answered by model.py."""

import json
import os
import signal
import subprocess
import sys


def kforge_ancestor() -> int:
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() == "kforge":
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return 0


def main() -> int:
    marker, script, *rest = sys.argv[1:]
    text = sys.stdin.read()
    messages = json.loads(text)["messages"]
    last_user = next(("".join(p.get("text", "") for p in m["content"]) for m in reversed(messages) if m["role"] == "user"), "")
    if marker in last_user:
        pid = kforge_ancestor()
        if pid:
            os.kill(pid, signal.SIGKILL)
        return 1
    return subprocess.run([sys.executable, script, *rest], input=text, text=True).returncode


if __name__ == "__main__":
    sys.exit(main())
