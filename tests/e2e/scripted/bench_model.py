"""A scripted model for `kforge bench` tests, used through the exec: provider:

    --llm 'exec:python3 bench_model.py CANDIDATES_DIR LOG.jsonl'

A generation request for problem NAME (read from the prompt's "# Task: `NAME` on ..." line) is
answered with CANDIDATES_DIR/NAME.py in a code block; when there is no such file, with the first
file of the directory, a program for another problem, so that problem fails. Analysis requests
get a one-line recommendation. Every call is appended to LOG as one JSON line.
"""

import json
import os
import re
import sys


def text_of(message: dict) -> str:
    return "".join(p.get("text", "") for p in message["content"])


def main() -> int:
    candidates, log_path = sys.argv[1], sys.argv[2]
    request = json.load(sys.stdin)
    messages = request["messages"]
    system = text_of(messages[0]) if messages else ""
    kind = "analyze" if "performance analyst" in system else "generate"
    first_user = next((text_of(m) for m in messages if m["role"] == "user"), "")
    match = re.search(r"# Task: `([^`]+)`", first_user)
    name = match.group(1) if match else ""
    if kind == "analyze":
        reply = "1. Keep the loop simple and vectorisable."
        used = None
    else:
        path = os.path.join(candidates, f"{name}.py")
        if not os.path.exists(path):
            path = os.path.join(candidates, sorted(os.listdir(candidates))[0])
        with open(path) as f:
            reply = f"```python\n{f.read()}```\n"
        used = os.path.basename(path)
    with open(log_path, "a") as f:
        f.write(json.dumps({"kind": kind, "problem": name, "reply_file": used}) + "\n")
    print(json.dumps({"text": reply, "usage": {"input_tokens": len(json.dumps(request)) // 4,
                                               "output_tokens": len(reply) // 4}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
