"""The driver's bridge to Ray: kforge (C++) starts it with `python -m kforge_ray.bridge` and sends
it evaluations; it runs each as a Ray task with the resources kforge asked for and sends results
back as they finish. It connects to a cluster (--address) or starts a local Ray instance, which
it stops when it exits (stdin closed, or kforge gone: it dies with kforge).

Protocol, one JSON object per line (commands on stdin, replies on fd 3; Ray's own output goes to
stdout/stderr, which kforge writes to the bench's log):
  <- {"event": "ready", "address": A, "nodes": N, "device_units": U}    first, once
  <- {"event": "error", "message": M}                                    instead, and exits
  -> {"op": "submit", "id": I, "resources": {"num_cpus", "num_gpus", "resources"}, "request": R}
  <- {"event": "result", "id": I, "node": "host/1a2b3c4d", "result": EvalResult (a pair: its measurement)}
  <- {"event": "failed", "id": I, "message": M}
The bridge's environment holds no credentials (kforge removes them), and neither do requests."""

import argparse
import json
import os
import queue
import sys
import threading

RETRIES = 3  # a task whose worker or node died runs again, up to this many times


def device_resource(device_kind: str) -> str:
    return "kforge_cpu" if device_kind == "cpu" else "GPU"


def device_units(nodes, device_kind: str) -> float:
    """Units of the device over the alive nodes of `ray.nodes()`."""
    res = device_resource(device_kind)
    return sum(n.get("Resources", {}).get(res, 0) for n in nodes if n.get("Alive"))


def describe_failure(error: Exception) -> str:
    cause = getattr(error, "cause", None)  # a RayTaskError carries the task's own exception
    if cause is not None and type(cause).__name__ == "NodeRefused":
        return str(cause)
    text = str(cause if cause is not None else error).strip()
    return f"{type(error).__name__}: {text[:2000]}"


class Replies:
    def __init__(self, fd: int):
        self.out = os.fdopen(fd, "w", buffering=1)
        self.lock = threading.Lock()

    def send(self, **reply):
        with self.lock:
            self.out.write(json.dumps(reply) + "\n")


def read_commands(stream, commands: queue.Queue):
    for line in stream:
        if line.strip():
            commands.put(json.loads(line))
    commands.put(None)  # stdin closed: kforge is done (or gone)


def connect(ray, args):
    common = dict(log_to_driver=False, namespace="kforge")
    if args.address:
        return ray.init(address=args.address, **common)
    # "local": a new instance even when another one runs on this machine (Ray would join that one).
    return ray.init(address="local", num_cpus=args.local_cpus or None, resources={"kforge_cpu": 1},
                    include_dashboard=False, **common)


def serve(ray, task, kforge: str, commands: queue.Queue, replies: Replies):
    remote = ray.remote(max_retries=RETRIES)(task.evaluate)
    in_flight = {}  # ObjectRef -> request id
    open_ = True
    while open_ or in_flight:
        try:
            while True:
                command = commands.get(timeout=0.05 if in_flight else 0.5)
                if command is None:
                    open_ = False
                    for ref in in_flight:  # nobody waits for these any more
                        ray.cancel(ref, force=True)
                    return
                if command.get("op") == "submit":
                    r = command["resources"]
                    ref = remote.options(num_cpus=r["num_cpus"], num_gpus=r["num_gpus"],
                                         resources=r["resources"] or None).remote(kforge, command["request"])
                    in_flight[ref] = command["id"]
        except queue.Empty:
            pass
        if not in_flight:
            continue
        done, _ = ray.wait(list(in_flight), num_returns=len(in_flight), timeout=0.2)
        for ref in done:
            rid = in_flight.pop(ref)
            try:
                out = ray.get(ref)
                replies.send(event="result", id=rid, node=out["node"], result=out["result"])
            except Exception as e:  # noqa: BLE001 - every failure goes back to kforge, with its reason
                replies.send(event="failed", id=rid, message=describe_failure(e))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m kforge_ray.bridge")
    p.add_argument("--kforge", required=True, help="the kforge binary each node runs")
    p.add_argument("--device-kind", required=True, help="the target's device kind: cpu or a GPU kind")
    p.add_argument("--address", default="", help="a running Ray cluster; default: start a local instance")
    p.add_argument("--local-cpus", type=int, default=0, help="CPUs of the local instance (default: Ray's count)")
    args = p.parse_args(argv)
    replies = Replies(3)
    try:
        import ray
    except ImportError as e:
        replies.send(event="error", message=f"the ray executor needs the Python package ray in {sys.executable} "
                                            f"(pip install -r worker/requirements-ray.txt): {e}")
        return 2
    from kforge_ray import task

    # Nodes need kforge installed, not this package on their Python path: the task travels by value.
    ray.cloudpickle.register_pickle_by_value(task)
    where = args.address or "a local Ray instance"
    try:
        context = connect(ray, args)
    except Exception as e:  # noqa: BLE001
        replies.send(event="error", message=f"cannot connect to Ray at {where}: {e}")
        return 2
    try:
        nodes = ray.nodes()
        units = device_units(nodes, args.device_kind)
        if units <= 0:
            hint = ("give the nodes meant for CPU timings the resource: ray start ... --resources "
                    "'{\"kforge_cpu\": 1}'" if args.device_kind == "cpu" else "add nodes with GPUs")
            replies.send(event="error", message=f"no node of the Ray cluster at {where} offers "
                                                f"{device_resource(args.device_kind)}, which the target's device "
                                                f"kind {args.device_kind} needs: {hint}")
            return 2
        address = getattr(context, "address_info", {}).get("gcs_address", args.address)
        replies.send(event="ready", address=address, nodes=sum(1 for n in nodes if n.get("Alive")),
                     device_units=units)
        commands = queue.Queue()
        threading.Thread(target=read_commands, args=(sys.stdin, commands), daemon=True).start()
        serve(ray, task, args.kforge, commands, replies)
        return 0
    finally:
        ray.shutdown()


if __name__ == "__main__":
    sys.exit(main())
