"""Entry point: ``python -m kforge_worker serve --role reference|candidate``, or
``python -m kforge_worker peaks --device D --cache DIR [--threads N]`` to measure and cache a device's
peaks (speed of light) ahead of time, e.g. before a parallel test run would load the machine, or
``python -m kforge_worker describe PROBLEM [--set N=V]... --json FILE`` for the source as it runs and the
shapes and dtypes of its inputs (kforge run's prompts), or ``python -m kforge_worker baseline PROBLEM ...``
for the device, the baselines' times and the speed of light that kforge run's first prompt states."""

import argparse
import os
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="kforge_worker")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="answer commands from kforge on stdin")
    serve.add_argument("--role", choices=["reference", "candidate"], required=True)
    peaks = sub.add_parser("peaks", help="measure and cache the device's bandwidth and matmul peaks")
    peaks.add_argument("--device", default="cpu")
    peaks.add_argument("--cache", required=True, help="the peaks cache folder (<kforge cache>/peaks)")
    peaks.add_argument("--threads", type=int, default=0, help="torch threads, as kforge eval will use")
    peaks.add_argument("--remeasure", action="store_true")
    describe = sub.add_parser("describe", help="the problem's source as it runs, its input shapes and dtypes")
    describe.add_argument("problem")
    describe.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    describe.add_argument("--json", required=True, help="where the description goes")
    baseline = sub.add_parser("baseline", help="the device, eager and torch.compile times and speed of light, "
                                               "before any candidate (kforge run's first prompt)")
    baseline.add_argument("problem")
    baseline.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    baseline.add_argument("--device", default="cpu")
    baseline.add_argument("--threads", type=int, default=0)
    baseline.add_argument("--reps", type=int, default=20)
    baseline.add_argument("--cache", default="", help="the peaks cache folder (<kforge cache>/peaks)")
    baseline.add_argument("--precision", default="strict", choices=["strict", "relaxed"])
    baseline.add_argument("--no-compile", action="store_true", help="do not time torch.compile")
    baseline.add_argument("--json", required=True, help="where the measurements go")
    args = parser.parse_args(argv)

    if args.command == "baseline":
        from kforge_worker.roles import baseline as measure_baseline

        return measure_baseline.main(args.problem, args.set, args)

    if args.command == "describe":
        from kforge_worker.roles import describe as describe_problem

        return describe_problem.main(args.problem, args.set, args.json)

    if args.command == "peaks":
        import json

        from kforge_worker.checks import sol
        from kforge_worker.common import session

        session.setup(args.device, args.threads)
        data = sol.device_peaks(args.device, args.cache, args.remeasure)
        print(json.dumps({"cached": data["cached"], "bandwidth": data["bandwidth"], "flops": data["flops"],
                          "implausible": data.get("implausible", [])}))
        return 0

    from kforge_worker.common import protocol

    if args.role == "candidate":
        # Before anything of the candidate's runs: no keyring channel to a later candidate (keyrings.py).
        from kforge_worker.common import keyrings

        keyrings.refuse()
    try:
        import torch  # noqa: F401  (every command needs it)
    except Exception as exc:  # the interpreter lacks torch, or torch is broken: the machine's problem
        protocol.serve({}, fallback=_cannot_import_torch(exc))
        return 0

    try:
        handlers = _role_handlers(args.role)
    except ModuleNotFoundError as exc:
        if not exc.name or exc.name.split(".")[0] in ("kforge_worker", "kforge_kernels"):
            raise  # kforge's own package is broken: not the interpreter's doing
        protocol.serve({}, fallback=_missing_package(exc.name))
        return 0
    from kforge_worker.common import session

    protocol.serve(handlers, after=session.after_command)
    sys.stdout.flush()
    return 0


def _role_handlers(role: str) -> dict:
    """The commands a role answers; imports only that role's modules (a package the worker needs and
    the interpreter lacks raises ModuleNotFoundError here)."""
    from kforge_worker.checks import compare, precision, runtime_checks
    from kforge_worker.common import gpu_env, session
    from kforge_worker.exchange import tensors

    gpu_env.apply()
    if role == "reference":
        from kforge_worker.roles.reference import ReferenceSession

        handlers = ReferenceSession().handlers()
        handlers["warm"] = lambda req: session.warm(req, checks=(tensors.ready_digest, compare.ready_device,
                                                                  precision.ready_device))
        return handlers
    from kforge_kernels import hooks
    from kforge_worker.roles import compile_only
    from kforge_worker.roles.candidate import CandidateSession

    hooks.install()
    handlers = CandidateSession().handlers()
    handlers["compile"] = compile_only.compile_candidate
    handlers["warm"] = lambda req: session.warm(req, checks=(tensors.ready_digest, runtime_checks.ready_device))
    return handlers


def setup_script() -> str:
    """The script that makes the worker's environment in the layout this worker runs from: a build
    tree's scripts/setup.sh, an installed copy's share/kforge/setup-worker.sh; none in a bundle."""
    data = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for script in (os.path.join(data, "scripts", "setup.sh"), os.path.join(data, "setup-worker.sh")):
        if os.path.exists(script):
            return script
    return ""


def _cannot_import_torch(exc: Exception):
    script = setup_script()
    return _environment_problem(
        f"{sys.executable} cannot import torch ({type(exc).__name__}: {exc}); install torch into that interpreter"
        f"{f' ({script} does)' if script else ''}, or pick another one with --python or worker.python in kforge.toml")


def _missing_package(name: str):
    requirements = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "requirements.txt")
    script = setup_script()
    return _environment_problem(
        f"{sys.executable} cannot import {name}, which kforge's worker needs; install the worker's packages into "
        f"that interpreter ({sys.executable} -m pip install -r {requirements}{f'; {script} does' if script else ''}), "
        "or pick another one with --python or worker.python in kforge.toml")


def _environment_problem(message: str):
    """A handler answering every command with ``message``: the machine's problem, not the candidate's."""
    from kforge_worker.common.errors import EnvironmentProblem

    def answer(request: dict) -> dict:
        raise EnvironmentProblem(message)

    return answer


if __name__ == "__main__":
    sys.exit(main())
