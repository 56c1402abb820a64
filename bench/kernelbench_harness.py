"""Judges a candidate with KernelBench's own harness (eval_kernel_against_ref from an
unmodified KernelBench checkout; it times the reference too), for side-by-side comparison
with kforge's verdict and speedup. Prints one JSON line.
    python bench/kernelbench_harness.py KERNELBENCH_DIR PROBLEM CANDIDATE [--trials 5] [--reps 30]
KernelBench's package imports its LLM clients (openai, litellm, python-dotenv) at import time; they
play no part in evaluation, so where they are not installed empty stand-ins are registered."""

import argparse
import json
import os
import sys
import tempfile
import time
import types
from pathlib import Path


def stand_in_llm_clients() -> None:
    for name in ("openai", "litellm", "dotenv"):
        try:
            __import__(name)
        except ImportError:
            module = types.ModuleType(name)
            module.OpenAI = module.completion = module.load_dotenv = lambda *a, **k: None
            sys.modules[name] = module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernelbench_dir")
    parser.add_argument("problem")
    parser.add_argument("candidate")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--build-dir", default=os.environ.get("TORCH_EXTENSIONS_DIR") or tempfile.mkdtemp(prefix="kb-"),
                        help="KernelBench's build_dir (default $TORCH_EXTENSIONS_DIR, so a prebuilt extension is reused)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.kernelbench_dir) / "src"))
    stand_in_llm_clients()
    import torch
    from kernelbench import eval as kb_eval

    ref_src = Path(args.problem).read_text()
    cand_src = Path(args.candidate).read_text()
    start = time.perf_counter()
    result = kb_eval.eval_kernel_against_ref(
        ref_src, cand_src, seed_num=42, num_correct_trials=args.trials, num_perf_trials=args.reps,
        measure_performance=True, timing_method="cuda_event", build_dir=args.build_dir,
        device=torch.device("cuda:0"), backend="cuda", precision=torch.float32)
    eval_s = time.perf_counter() - start
    out = {
        "problem": args.problem, "candidate": args.candidate, "harness": "kernelbench",
        "compiled": result.compiled if result else False, "correct": result.correctness if result else False,
        "candidate_ms": result.runtime if result else None, "candidate_stats": result.runtime_stats if result else {},
        "eager_ms": getattr(result, "ref_runtime", None), "eager_stats": getattr(result, "ref_runtime_stats", {}),
        "eval_s": eval_s, "l2_flush": "clear_l2_cache before every timed call (cuda_event)",
        "metadata": {k: str(v)[:300] for k, v in (result.metadata if result else {}).items()},
    }
    if out["candidate_ms"] and out["candidate_ms"] > 0 and out["eager_ms"]:
        out["speedup_vs_eager"] = out["eager_ms"] / out["candidate_ms"]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
