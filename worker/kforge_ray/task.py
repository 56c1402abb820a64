"""What runs on a Ray node: one evaluation (or a refinement loop's head-to-head timing of two
candidates), done by that node's own kforge (`kforge eval-request`: sandboxed candidates, trusted
reference, verdict) and sent back to the driver, which stores it.

The node refuses (NodeRefused, which Ray does not retry) when kforge is missing there or the
candidate sandbox cannot run there; a worker or node that dies is Ray's business: the task is
retried elsewhere, and only the driver records results, so nothing is stored twice."""

import json
import os
import socket
import subprocess


class NodeRefused(Exception):
    """This node cannot evaluate candidates safely (or at all); the message says why."""


def node_name() -> str:
    import ray

    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"


def evaluate(kforge: str, request: dict) -> dict:
    node = node_name()
    if not os.access(kforge, os.X_OK):
        raise NodeRefused(f"node {node}: no kforge at {kforge} (install kforge at the same path on every node)")
    # kforge eval-request dies with this worker (PR_SET_PDEATHSIG), and its workers die with it.
    proc = subprocess.run([kforge, "eval-request"], input=json.dumps(request), capture_output=True, text=True)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        raise RuntimeError(f"node {node}: kforge eval-request ended with code {proc.returncode}: "
                           f"{proc.stderr.strip()[-2000:]}") from None
    if "refused" in out:
        raise NodeRefused(f"node {node} refuses to evaluate: {out['refused']}")
    return {"node": node, "result": out["result"]}
