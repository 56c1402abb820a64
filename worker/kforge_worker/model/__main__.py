"""``python -m kforge_worker.model analyze MODEL --out DIR [--set N=V]...``: regions and their problems
(DIR/analysis.json, DIR/regions/); ``hf-file ARCH --out FILE [--set K=V]...``: a model file for a
transformers architecture built from its config; ``finish --out DIR --kernels FILE``: the regions' kernels installed,
verified and measured end to end (DIR/patch.py, DIR/report.json, DIR/report.md); ``measure``: the
process that runs the patched model for ``finish`` (kernels are candidates: never in this one)."""

import argparse
import json
import sys
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="kforge_worker.model")
    sub = parser.add_subparsers(dest="command", required=True)
    analyze = sub.add_parser("analyze")
    analyze.add_argument("model")
    analyze.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    analyze.add_argument("--out", required=True)
    analyze.add_argument("--device", default="cpu")
    analyze.add_argument("--threads", type=int, default=0)
    analyze.add_argument("--reps", type=int, default=10)
    analyze.add_argument("--warmup", type=int, default=2)
    analyze.add_argument("--seed", type=int, default=0)
    finish = sub.add_parser("finish")
    finish.add_argument("--out", required=True)
    finish.add_argument("--kernels", required=True, help="JSON: region name -> best candidate file and its speedup")
    finish.add_argument("--threads", type=int, default=0)
    finish.add_argument("--reps", type=int, default=20)
    finish.add_argument("--no-compile", action="store_true", help="no torch.compile baseline")
    finish.add_argument("--timeout", type=float, default=1800)
    hf_file = sub.add_parser("hf-file", help="a model file for a transformers architecture from its config")
    hf_file.add_argument("arch")
    hf_file.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    hf_file.add_argument("--device", default="cpu")
    hf_file.add_argument("--out", required=True, help="the model file to write")
    measure = sub.add_parser("measure")
    measure.add_argument("--plan", required=True)
    args = parser.parse_args(argv)

    from kforge_worker.common.errors import EnvironmentProblem, ProblemError

    try:
        if args.command == "analyze":
            from kforge_worker.model import analysis
            return analysis.main(args)
        if args.command == "hf-file":
            from kforge_worker.common import problem
            from kforge_worker.model import hf_config
            hf_config.write(args.arch, problem.parse_sets(args.set), args.device, Path(args.out))
            return 0
        if args.command == "finish":
            from kforge_worker.model import finish as finish_mod
            return finish_mod.main(args)
        from kforge_worker.model import end_to_end
        return end_to_end.main(args.plan)
    except (ProblemError, EnvironmentProblem) as e:  # the model file, or a device this machine lacks
        print(f"kforge model: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
