"""A stand-in model for timing `kforge run` (bench/loop_turnaround.sh), used through the exec: provider:

    --llm 'exec:python3 bench/delayed_llm.py CANDIDATE DELAY_S'

It answers like a real model, only predictably: after DELAY_S seconds (a model's thinking time),
every generation request gets CANDIDATE with a comment naming the request inserted into its kernel
source, so that each candidate is new code and its build misses the compile cache; analysis requests
get a one-line recommendation.
"""

import hashlib
import json
import sys
import time


def main() -> int:
    candidate, delay = sys.argv[1], float(sys.argv[2])
    request = json.load(sys.stdin)
    messages = request["messages"]
    system = "".join(p.get("text", "") for p in messages[0]["content"]) if messages else ""
    time.sleep(delay)
    if "performance analyst" in system:
        reply = "1. Keep the kernel as it is; try a larger block next."
    else:
        source = open(candidate).read()
        mark = next(m for m in ("__global__", 'extern "C"') if m in source)
        nonce = hashlib.sha256(json.dumps(request).encode()).hexdigest()[:12]
        reply = f"```python\n{source.replace(mark, f'/* request {nonce} */ {mark}', 1)}```\n"
    print(json.dumps({"text": reply, "usage": {"input_tokens": len(json.dumps(request)) // 4,
                                               "output_tokens": len(reply) // 4}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
