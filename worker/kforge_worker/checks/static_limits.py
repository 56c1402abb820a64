"""The static checks run in a disposable child process, within stated limits.

The reference process must outlive any candidate source. A pathological one (an expression nested
deeply enough to exhaust the parser's recursion, megabytes of text that make a check slow) would
otherwise crash or stall the reference, and the evaluation would blame the problem. So the checks
run in a child interpreter that imports only ``ast``, ``re`` and kforge's operator tables, and:

    source      at most MAX_SOURCE_BYTES (checked before the child starts)
    nesting     at most MAX_DEPTH levels of syntax tree (measured without recursion)
    time        at most TIME_LIMIT_S seconds, then the child is killed
    memory      at most MEMORY_LIMIT_BYTES of address space (set by the child on itself)

Exceeding a limit gives the check ``static_limits``; a child that crashes or answers nonsense gives
``check_error`` with its log. Both fail the candidate, never the problem: faults in the problem's own
source still raise ProblemError.
"""

import ast
import json
import os
import subprocess
import sys
from typing import List, Optional

MAX_SOURCE_BYTES = 256 * 1024
MAX_DEPTH = 100
TIME_LIMIT_S = 30.0
MEMORY_LIMIT_BYTES = 2 << 30

LIMITS = {"source_bytes": MAX_SOURCE_BYTES, "nesting_depth": MAX_DEPTH, "seconds": TIME_LIMIT_S,
          "memory_bytes": MEMORY_LIMIT_BYTES}


def tree_depth(tree: ast.AST) -> int:
    """The deepest nesting of the syntax tree, walked with an explicit stack (no recursion)."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _finding(name: str, message: str, log: str = "") -> dict:
    out = {"name": name, "verdict": "fail", "message": message, "limits": LIMITS}
    if log:
        out["log"] = log[-4000:]
    return out


def run_isolated(candidate_path: str, problem_path: str, allowed: List[str],
                 time_limit_s: float = TIME_LIMIT_S, kernel_loops: List[str] = (),
                 kernel_modules: List[str] = ()) -> dict:
    """The static checks' reply for the reference's ``static_check`` command: ``checks`` (with a
    ``static_limits`` or ``check_error`` failure when the checks could not run to the end) and
    ``syntax_error`` when the candidate does not parse."""
    size = os.path.getsize(candidate_path)
    if size > MAX_SOURCE_BYTES:
        return {"checks": [_finding("static_limits", f"the candidate's source is {size} bytes; the static checks read "
                                                     f"at most {MAX_SOURCE_BYTES} bytes (256 KiB)")]}
    request = json.dumps({"candidate": candidate_path, "problem": problem_path, "allowed": list(allowed),
                          "kernel_loops": list(kernel_loops), "kernel_modules": list(kernel_modules)})
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds kforge_worker
    env = dict(os.environ)
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        child = subprocess.run([sys.executable, "-m", "kforge_worker.checks.static_limits"], input=request,
                               capture_output=True, text=True, timeout=time_limit_s, env=env)
    except subprocess.TimeoutExpired as exc:
        log = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return {"checks": [_finding("static_limits", f"the static checks did not finish within {time_limit_s:g} s "
                                                     f"on this source", log)]}
    reply = _parse_reply(child.stdout)
    if child.returncode != 0 or reply is None:
        how = (f"killed by signal {-child.returncode}" if child.returncode < 0
               else f"exit status {child.returncode}")
        return {"checks": [_finding("check_error", f"the static checks crashed on this source ({how})",
                                    child.stderr)]}
    if "problem_error" in reply:
        from kforge_worker.common.errors import ProblemError

        raise ProblemError(f"the problem's source could not be analysed: {reply['problem_error']}")
    if "limit" in reply:
        return {"checks": [_finding("static_limits", reply["limit"], child.stderr)]}
    return reply


def _parse_reply(stdout: str) -> Optional[dict]:
    try:
        reply = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return reply if isinstance(reply, dict) else None


def _child() -> dict:
    """Runs inside the disposable process: one request on stdin, one JSON reply on stdout."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    except (ImportError, ValueError, OSError):
        pass  # no such limit here: the time limit still holds
    from kforge_worker.checks import static_checks

    req = json.loads(sys.stdin.read())
    with open(req["candidate"], encoding="utf-8", errors="replace") as f:
        source = f.read()
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return {"checks": [], "syntax_error": f"{exc.msg} (line {exc.lineno})"}
    except (RecursionError, MemoryError) as exc:
        return {"limit": f"the candidate's source is nested too deeply for the parser ({type(exc).__name__}); "
                         f"the static checks accept at most {MAX_DEPTH} levels"}
    depth = tree_depth(tree)
    if depth > MAX_DEPTH:
        return {"limit": f"the candidate's syntax tree is {depth} levels deep; the static checks accept at most "
                         f"{MAX_DEPTH}"}
    try:
        with open(req["problem"], encoding="utf-8", errors="replace") as f:
            problem = f.read()
        static_checks.reference_computations(problem)
    except Exception as exc:  # the problem's own fault, reported as such
        return {"problem_error": f"{type(exc).__name__}: {exc}"[:2000]}
    return {"checks": static_checks.run(source, problem, req["allowed"], tree=tree,
                                        kernel_loops=req.get("kernel_loops", []),
                                        kernel_modules=req.get("kernel_modules", []))}


if __name__ == "__main__":
    print(json.dumps(_child()))
