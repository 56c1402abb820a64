"""Judging what the candidate process reported about its own calls, in the trusted reference process.

The candidate process only gathers facts (runtime_checks.py); each fact counts against the candidate
only where the reference itself does not do the same thing (a reference that returns a view of its
input makes aliasing legitimate). Findings are {name, verdict, message}; kforge turns a ``fail`` into
the ``rejected`` status.
"""

from typing import Dict, List, Optional, Set

import torch
import xxhash

from kforge_worker.common import ops
from kforge_worker.exchange import tensors


def reference_facts(outputs, inputs) -> dict:
    from kforge_worker.checks.runtime_checks import _leaves

    leaves = _leaves(outputs)
    storages = {t.untyped_storage().data_ptr() for t in _leaves(list(inputs)) if t.numel()}
    return {
        "plain_tensors": all(type(t) is torch.Tensor or type(t) is torch.nn.Parameter for t in leaves),
        "aliases_inputs": any(bool(t.numel()) and t.untyped_storage().data_ptr() in storages for t in leaves),
    }


def _category_findings(events: list, when: str) -> List[dict]:
    by_cat: Dict[str, list] = {}
    for cat, detail in events:
        by_cat.setdefault(cat, []).append(detail)
    out = []
    for cat, details in by_cat.items():
        verdict = "warn" if cat in ("dynamic_code", "native_loading") else "fail"
        what = {"file_io": "touched files", "network": "used the network", "concurrency": "started processes or threads",
                "introspection": "inspected frames, the garbage collector or raw memory",
                "dynamic_code": "compiled code at run time", "native_loading": "loaded native symbols"}[cat]
        out.append({"name": cat, "verdict": verdict,
                    "message": f"{when}, the candidate {what}: {'; '.join(details[:3])}"})
    return out


def judge_precision_flags(flags: Optional[dict], policy: str, when: str) -> List[dict]:
    """Under the strict policy fp32 means fp32: a candidate that lets library GEMMs or convolutions
    round their inputs to TF32 (10-bit mantissa) gains speed the reference was not allowed."""
    if policy != "strict" or not isinstance(flags, dict):
        return []
    loosened = [name for name in ("cuda_matmul_tf32", "cudnn_tf32") if flags.get(name)]
    if flags.get("float32_matmul_precision", "highest") != "highest":
        loosened.append(f"float32_matmul_precision={flags['float32_matmul_precision']}")
    if not loosened:
        return []
    return [{"name": "precision_flags", "verdict": "fail",
             "message": f"{when}, the candidate switched on reduced-precision fp32 math ({', '.join(loosened)}) "
                        f"under the strict precision policy"}]


def judge_run(facts: Optional[dict], ref: dict, reference_ops: Set[str], allowed: Set[str],
              policy: str = "strict", reference_flops: Optional[Dict[str, float]] = None) -> List[dict]:
    """Findings from one correctness run of the candidate. ``reference_flops``: the reference's GEMM
    and convolution FLOPs at this trial's shapes, by library kind (ops.delegation)."""
    if not isinstance(facts, dict):
        return [{"name": "runtime_integrity", "verdict": "fail",
                 "message": "the candidate process sent no runtime facts with its outputs"}]
    out = _category_findings(facts.get("events", []), "while its forward ran")
    if facts.get("tampered"):
        out.append({"name": "monkey_patching", "verdict": "fail",
                    "message": f"the candidate replaced {', '.join(facts['tampered'][:6])}"})
    if facts.get("new_threads"):
        out.append({"name": "concurrency", "verdict": "fail",
                    "message": f"threads left running after forward returned: {', '.join(facts['new_threads'][:4])}"})
    if facts.get("running_threads"):
        out.append({"name": "concurrency", "verdict": "fail",
                    "message": f"threads the candidate started earlier were running while forward ran "
                               f"({', '.join(map(str, facts['running_threads'][:4]))}): torch work on them escapes "
                               f"the operator recorder and the timer"})
    if facts.get("children"):
        out.append({"name": "concurrency", "verdict": "fail",
                    "message": f"child processes left running after forward returned: {facts['children'][:4]}"})
    if not facts.get("plain_tensors", True) and ref.get("plain_tensors", True):
        out.append({"name": "output_type", "verdict": "fail",
                    "message": f"outputs are {', '.join(sorted(set(facts.get('output_types', []))))}, not plain "
                               f"tensors: a subclass or lazy tensor can do its work when read, outside the timer"})
    if facts.get("deferred"):
        out.append({"name": "deferred_output", "verdict": "fail",
                    "message": "outputs kept changing after forward returned: work was still running outside the "
                               "timed call"})
    if any(facts.get("aliases_inputs", [])) and not ref.get("aliases_inputs", False):
        out.append({"name": "output_aliasing", "verdict": "fail",
                    "message": "an output shares memory with an input, where the reference returns fresh memory"})
    out += judge_precision_flags(facts.get("precision_flags"), policy, "while its forward ran")
    if "aten_ops" in facts:
        if not facts.get("ops_recorded", False):
            out.append({"name": "torch_delegation", "verdict": "fail",
                        "message": "the operator recorder was removed during forward"})
        else:
            custom = [op for op in facts["aten_ops"] if isinstance(op, str) and "::" in op]
            if custom:
                out.append({"name": "torch_delegation", "verdict": "fail",
                            "message": f"at run time the candidate called custom operators with Python kernels "
                                       f"({', '.join(custom[:4])}): torch runs such a kernel below the operator "
                                       f"recorder, where its torch work cannot be judged; call kernels directly"})
            flops = facts.get("library_flops")
            flops = ({k: float(v) for k, v in flops.items() if isinstance(v, (int, float))}
                     if isinstance(flops, dict) else None)
            found = ops.delegation(reference_ops, ops.canonical_set(facts["aten_ops"]), allowed, reference_flops,
                                   flops)
            if found:
                out.append({"name": "torch_delegation", "verdict": found[0],
                            "message": f"at run time {found[1]} (aten operators: {', '.join(facts['aten_ops'][:12])})"})
    return out


def judge_import(events: list, tampered: list, flags: Optional[dict] = None, policy: str = "strict") -> List[dict]:
    out = _category_findings(events, "while it was imported")
    out += judge_precision_flags(flags, policy, "while it was imported and built")
    if tampered:
        out.append({"name": "monkey_patching", "verdict": "fail",
                    "message": f"importing the candidate replaced {', '.join(tampered[:6])}"})
    return out


def fingerprint(obj) -> list:
    """A digest of a result's values (bitwise), for telling whether two results are the same; only
    compared with fingerprints this function made. A device tensor's is tensors.digest, computed where
    it is; a host tensor's is a 128-bit xxh3 of its bytes, at the memory's speed on any processor
    (the digest's int8 matrix product takes 0.19 s for 64 MB on a processor without int8 dot
    products, xxh3 3 ms)."""
    out = []
    with torch._C.DisableTorchFunction():
        for t in tensors.leaves(obj):
            t = torch.Tensor.detach(t)
            if t.device.type == "cpu":
                out.append([str(t.dtype), list(t.shape), xxhash.xxh3_128_hexdigest(tensors.value_bytes(t).numpy())])
            else:
                out.extend(tensors.digest(t))
    return out


class Independence:
    """Outputs identical across trials with different inputs, where the reference's differ."""

    def __init__(self):
        self.candidate: Dict[int, list] = {}
        self.reference: Dict[int, list] = {}

    def add(self, trial: int, reference_outputs, candidate_outputs, identical: bool = False) -> Optional[dict]:
        """``identical``: the check found the candidate's outputs equal to the reference's
        (compare.compare's ``identical``); they share its fingerprint, not digested again (a zero's
        sign aside, which no input-independence hides behind)."""
        self.reference[trial] = fingerprint(reference_outputs)
        self.candidate[trial] = self.reference[trial] if identical else fingerprint(candidate_outputs)
        for other, digest in self.candidate.items():
            if other != trial and digest == self.candidate[trial] and self.reference[other] != self.reference[trial]:
                return {"name": "input_independent", "verdict": "fail",
                        "message": f"trials {other} and {trial} had different inputs and different reference "
                                   f"outputs, but the candidate returned bit-identical outputs"}
        return None
