"""Entry point: ``python -m kforge_worker serve --role reference|candidate``."""

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="kforge_worker")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="answer commands from kforge on stdin")
    serve.add_argument("--role", choices=["reference", "candidate"], required=True)
    args = parser.parse_args(argv)

    from kforge_worker import gpu_env, protocol

    gpu_env.apply()
    if args.role == "reference":
        from kforge_worker.reference import ReferenceSession

        protocol.serve(ReferenceSession().handlers())
    else:
        from kforge_worker import compile_only, inline_cache, triton_interp
        from kforge_worker.candidate import CandidateSession

        inline_cache.install()
        triton_interp.install()
        handlers = CandidateSession().handlers()
        handlers["compile"] = compile_only.compile_candidate
        protocol.serve(handlers)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
