"""`python -m kforge_worker.model finish`: the regions' best kernels back into the model.

1. patch.py with every region that has a kernel;
2. a measuring process (end_to_end.py) runs the model with all of them and with each one alone, on
   fresh inputs, interleaved with eager (and torch.compile);
3. this process checks every variant's outputs against the original model's, which it runs itself;
4. a region is kept when its variant alone is correct and faster than eager end to end; the kept set
   is measured again when it is not the whole set, and patch.py keeps only it; the kept kernels are
   also measured under torch.compile, as custom ops (unless --no-compile);
5. report.json and report.md: each region's share, its kernel's speedup, the predicted (Amdahl) and
   the measured end-to-end gain."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import torch

from kforge_worker.checks import compare
from kforge_worker.model import analysis, decoding, end_to_end, loading, patch_writer, report
from kforge_worker.model import verdict as outputs_verdict

FRESH_SEED_OFFSET = 1000  # fresh inputs: not the ones the regions were profiled with
COMPILED = "kforge+torch.compile"  # the variant with the kernels as custom ops, compiled


def measure(out_dir: Path, analysis_json: dict, configs: List[dict], tag: str, args) -> dict:
    plan = {"model": analysis_json["model"], "overrides": analysis_json["overrides"],
            "device": analysis_json["device"], "threads": args.threads, "seed": analysis_json["seed"],
            "fresh_seed": analysis_json["seed"] + FRESH_SEED_OFFSET, "patch": str(out_dir / "patch.py"),
            "configs": configs, "compile": not args.no_compile, "reps": args.reps, "decode": analysis_json.get("decode"),
            "outputs": str(out_dir / f"e2e-{tag}-outputs.pt"), "result": str(out_dir / f"e2e-{tag}.json")}
    plan_path = out_dir / f"e2e-{tag}-plan.json"
    plan_path.write_text(json.dumps(plan, indent=2))
    worker_dir = str(Path(__file__).resolve().parents[2])  # where kforge_worker and kforge_kernels are
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([worker_dir] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    try:
        proc = subprocess.run([sys.executable, "-m", "kforge_worker.model", "measure", "--plan", str(plan_path)],
                              capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"failed": f"the measuring process ran past {args.timeout:g} s"}
    (out_dir / f"e2e-{tag}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not Path(plan["result"]).is_file():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        return {"failed": f"the measuring process ended with status {proc.returncode}: {tail}"}
    result = json.loads(Path(plan["result"]).read_text())
    # The verdicts are this process's: the measuring process ran candidate code.
    module, model, _, _ = loading.load(plan["model"], plan["overrides"], plan["device"], plan["seed"])
    inputs = end_to_end.fresh_inputs(module, plan["device"], plan["fresh_seed"])
    with torch.no_grad():
        expected = decoding.plain(model(*inputs))
    decode = plan["decode"]
    if decode:  # the same teacher-forced steps as the measuring process's
        steps = decoding.tokens(model, decode["batch"], decode["steps"], plan["fresh_seed"], plan["device"])
        expected_decode = decoding.decode(model, inputs[0], steps, decode["cache_argument"])[1]
    reference, reference_decode = higher_precision_outputs(inputs, decode and steps, plan)
    try:
        got = torch.load(plan["outputs"], weights_only=True)
    except Exception as e:
        return {"failed": f"the measuring process's outputs do not load: {e}"}
    result["verdicts"] = {}
    for config in configs:
        name = config["name"]
        if name in result["errors"]:
            result["verdicts"][name] = {"correct": False, "reason": result["errors"][name].splitlines()[0]}
        elif name not in got:
            result["verdicts"][name] = {"correct": False, "reason": "no outputs came back"}
        else:
            try:
                verdict = {"correct": True, **outputs_verdict.check(expected, got[name], reference)}
                if decode:  # the decode steps' logits too: the kernels run at other shapes there
                    if name + " decode" not in got:
                        raise compare.Mismatch({"message": "no decode logits came back"})
                    verdict["decode"] = outputs_verdict.check(expected_decode, got[name + " decode"], reference_decode,
                                                              path="decode logits")
                result["verdicts"][name] = verdict
            except compare.Mismatch as e:
                result["verdicts"][name] = {"correct": False, "reason": str(e)[:500]}
    Path(plan["result"]).write_text(json.dumps(result, indent=2))
    return result


def higher_precision_outputs(inputs, steps, plan: dict) -> tuple:
    """The outputs (and decode logits) of the model in higher precision, for the precision audit;
    (None, None) where it cannot run so (no room on the device, an operator without that dtype)."""
    try:
        # A fresh model (the same seed, the same weights) converted in place, not a copy: a closure
        # in the model (44_MiniGPTBlock's mlpf) holds its own modules, which a copy would not convert.
        _, higher, _, _ = loading.load(plan["model"], plan["overrides"], plan["device"], plan["seed"])
        dtype = outputs_verdict.higher_precision(higher)
        higher.to(dtype)
        with torch.no_grad():
            out = outputs_verdict.outputs_of(decoding.plain(higher(*outputs_verdict.cast(inputs, dtype))))
            out_decode = None
            if plan["decode"]:
                out_decode = outputs_verdict.outputs_of(
                    decoding.decode(higher, inputs[0], steps, plan["decode"]["cache_argument"])[1])
        return out, out_decode
    except Exception as e:  # the audit is then not applied; the tolerance still is
        print(f"kforge model: no precision audit end to end ({type(e).__name__}: {str(e)[:200]})", file=sys.stderr)
        return None, None


def compiled_config(names: List[str], args) -> List[dict]:
    """The installed kernels under torch.compile: each one a torch.library custom op (patch.py), so
    that compiling the patched model keeps the kernel inside the compiled graph."""
    return [] if args.no_compile else [{"name": COMPILED, "regions": names, "custom_ops": True, "compile": True}]


def finish(out_dir: Path, kernels: Dict[str, dict], args) -> dict:
    data = json.loads((out_dir / "analysis.json").read_text())
    by_name = {r["name"]: r for r in data["regions"]}
    with_kernels = []
    for name, k in kernels.items():
        if k.get("file") and Path(k["file"]).is_file() and name in by_name:
            with_kernels.append({"region": name, "instances": by_name[name]["instances"],
                                 "source": Path(k["file"]).read_text(), "call": by_name[name].get("call")})
    model_name = Path(data["model"]).name
    patch_path = out_dir / "patch.py"
    patch_writer.write(str(patch_path), model_name, with_kernels)
    names = [r["region"] for r in with_kernels]
    decisions = {n: {} for n in names}
    final_names: List[str] = []
    runs = {}
    if names:
        configs = [{"name": "kforge", "regions": names}]
        if len(names) > 1:
            configs += [{"name": f"only {n}", "regions": [n]} for n in names]
        configs += compiled_config(names, args)
        first = measure(out_dir, data, configs, "all", args)
        runs["all"] = first
        if "failed" not in first:
            for n in names:
                tag = "kforge" if len(names) == 1 else f"only {n}"
                verdict = first["verdicts"].get(tag, {"correct": False, "reason": "not measured"})
                variant = first["variants"].get(tag)
                speedup = variant["speedup_vs_eager"]["median"] if variant else None
                # Faster in its run's careful evaluation and faster inside the model: one noisy
                # end-to-end reading alone does not install a kernel that lost in its run.
                own = kernels[n].get("speedup")
                why = (verdict.get("reason") if not verdict["correct"] else
                       f"slower than eager in its run ({own:.2f}x)" if isinstance(own, (int, float)) and own <= 1.0 else
                       "not faster than eager end to end" if speedup is None or speedup <= 1.0 else "")
                keep = not why
                decisions[n] = {"correct": verdict["correct"], "reason": verdict.get("reason", ""),
                                "end_to_end_speedup_alone": speedup, "kept": keep, "why": why}
            final_names = [n for n in names if decisions[n]["kept"]]
            all_ok = first["verdicts"].get("kforge", {}).get("correct", False)
            if final_names == names and all_ok:
                runs["final"] = first
            elif final_names:
                patch_writer.write(str(patch_path), model_name, [r for r in with_kernels if r["region"] in final_names])
                runs["final"] = measure(out_dir, data, [{"name": "kforge", "regions": final_names}]
                                        + compiled_config(final_names, args), "final", args)
                if "failed" in runs["final"] or not runs["final"]["verdicts"]["kforge"]["correct"]:
                    final_names = []
        else:
            for n in names:
                decisions[n] = {"kept": False, "why": first["failed"]}
    if set(final_names) != set(names):
        patch_writer.write(str(patch_path), model_name, [r for r in with_kernels if r["region"] in final_names])
    if not final_names:  # still the baselines end to end: eager against torch.compile
        runs["final"] = measure(out_dir, data, [], "baselines", args)
    return report.build(data, kernels, decisions, final_names, runs, str(patch_path))


def main(args) -> int:
    out_dir = Path(args.out)
    kernels = json.loads(Path(args.kernels).read_text())
    from kforge_worker.common import session
    session.setup(json.loads((out_dir / "analysis.json").read_text())["device"], args.threads)
    result = finish(out_dir, kernels, args)
    (out_dir / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    (out_dir / "report.md").write_text(report.markdown(result))
    (out_dir / "report.html").write_text(report.html(result))
    return 0
