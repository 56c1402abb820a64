"""A scripted model for `kforge run` tests, used through the exec: provider:

    --llm 'exec:python3 model.py PLAN.json LOG.jsonl'

Each request is answered by the first rule of PLAN whose conditions hold:
  {"kind": "analyze" | "generate",          # the performance agent or the generation agent
   "turn": N,                               # generation: assistant replies already in the conversation
   "contains": "text",                      # optional: the last user message contains it
   "reply": "file.md"}                      # answer: this file, relative to the plan
Replies depend only on the request, so a run resumed after a crash gets the same answers.
Every call is appended to LOG as one JSON line with the whole request, for tests to inspect.
"""

import json
import os
import sys


def main() -> int:
    plan_path, log_path = sys.argv[1], sys.argv[2]
    request = json.load(sys.stdin)
    messages = request["messages"]
    system = "".join(p.get("text", "") for p in messages[0]["content"]) if messages else ""
    kind = "analyze" if "performance analyst" in system else "generate"
    turn = sum(1 for m in messages if m["role"] == "assistant")
    last_user = next(("".join(p.get("text", "") for p in m["content"]) for m in reversed(messages) if m["role"] == "user"), "")
    with open(plan_path) as f:
        plan = json.load(f)
    reply = None
    for rule in plan:
        if rule.get("kind", "generate") != kind:
            continue
        if "turn" in rule and rule["turn"] != turn:
            continue
        if "contains" in rule and rule["contains"] not in last_user:
            continue
        with open(os.path.join(os.path.dirname(os.path.abspath(plan_path)), rule["reply"])) as f:
            reply = f.read()
        break
    with open(log_path, "a") as f:
        f.write(json.dumps({"kind": kind, "turn": turn, "rule": None if reply is None else rule["reply"],
                            "request": request}) + "\n")
    if reply is None:
        print(json.dumps({"error": f"no rule for a {kind} request at turn {turn}"}))
        return 0
    print(json.dumps({"text": reply, "usage": {"input_tokens": len(json.dumps(request)) // 4,
                                               "output_tokens": len(reply) // 4}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
