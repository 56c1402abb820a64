"""Cold load_inline builds inside `kforge eval`, with kforge's builder started beside the worker and
without, side by side in one run.

    python bench/warm_builder.py [--rounds 3] [--kforge build/kforge] [-- EXTRA EVAL ARGS]
    python bench/warm_builder.py -- --compile-only            # on a machine without a GPU

kforge starts its builder ahead (torch imported before the request) where the candidate's source
names `load_inline`; the "cold" variant calls it by a name built at run time, so that the builder
starts when the request arrives, as before. Each build is of a new source (a round's comment), in
one cache whose precompiled headers round 0 makes. Prints one JSON line per evaluation
(`build.events[0]`: seconds from the candidate's request to the library loaded) and the medians."""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def variant(source: str, warm: bool, tag: str) -> str:
    source = source.replace('#include <torch/extension.h>', f'#include <torch/extension.h>\n// {tag}', 1)
    if warm:
        return source
    hidden = source.replace("from torch.utils.cpp_extension import load_inline",
                            "from torch.utils import cpp_extension\n_load = getattr(cpp_extension, 'load_' + 'inline')")
    hidden = hidden.replace("load_inline(", "_load(")
    hidden = "\n".join(line.replace("load_inline", "load-inline") if line.lstrip().startswith("#") else line
                        for line in hidden.split("\n"))  # comments
    assert "load_inline" not in hidden, "the cold variant must not name load_inline"
    return hidden


def evaluate(kforge: str, problem: str, candidate: Path, extra: list, env: dict) -> dict:
    out = candidate.with_suffix(".json")
    r = subprocess.run([kforge, "eval", problem, str(candidate), "--target", "cuda", "--json", str(out), *extra],
                       capture_output=True, text=True, env=env, timeout=1200)
    if not out.exists():
        return {"error": (r.stdout + r.stderr)[-800:]}
    result = json.loads(out.read_text())
    events = result.get("build", {}).get("events") or [{}]
    return {"status": result.get("status"), "build_s": events[0].get("seconds"),
            "warm_builder": events[0].get("warm_builder", False), "cache_hit": events[0].get("cache_hit")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kforge", default=str(ROOT / "build" / "kforge"))
    parser.add_argument("--problem", default=str(ROOT / "examples" / "problems" / "01_relu.py"))
    parser.add_argument("--candidate", default=str(ROOT / "tests" / "e2e" / "candidates" / "load_inline_cuda.py"))
    parser.add_argument("extra", nargs="*")
    args = parser.parse_args()
    source = Path(args.candidate).read_text()
    work = Path(tempfile.mkdtemp(prefix="kforge-warm-builder-"))
    env = dict(os.environ, KFORGE_CACHE_DIR=str(work / "cache"))
    seconds = {"warm": [], "cold": []}
    for round_ in range(args.rounds + 1):
        for label in ("warm", "cold"):
            candidate = work / f"r{round_}_{label}.py"
            candidate.write_text(variant(source, label == "warm", f"round {round_} {label}"))
            row = {"round": round_, "variant": label,
                   **evaluate(args.kforge, args.problem, candidate, args.extra, env)}
            print(json.dumps(row), flush=True)
            if round_ and row.get("build_s") is not None:
                seconds[label].append(row["build_s"])
            if round_ == 0:
                break  # round 0 makes the precompiled headers
    print(json.dumps({"rounds": args.rounds, "cpus": os.cpu_count(), "seconds": seconds,
                      "median_s": {k: statistics.median(v) for k, v in seconds.items() if v}}))


if __name__ == "__main__":
    main()
