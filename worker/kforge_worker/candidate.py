"""The untrusted side of an evaluation: imports the candidate (which builds its kernels), runs it on
inputs it is handed and writes back what it returned. It decides nothing: kforge checks the outputs
in the reference process and cross-checks the times reported here against its own clock.
"""

import os
import time

import torch

from kforge_worker import buildinfo, problem, session, tensors
from kforge_worker.timing import make_timer


class CandidateSession:
    def __init__(self):
        self.module = None
        self.model = None
        self.device = "cpu"
        self.timer = None

    def load_candidate(self, req: dict) -> dict:
        self.device = req.get("device", "cpu")
        session.setup(self.device, int(req.get("threads", 0)))
        session.set_precision(req.get("precision", "strict"))
        reply = {}
        if self.module is None:
            start = time.perf_counter()
            self.module = problem.load_module(req["candidate"], "kforge_candidate")
            reply["import_seconds"] = time.perf_counter() - start
            if not hasattr(self.module, "ModelNew"):
                raise ImportError("the candidate defines no class ModelNew")
        init_inputs = tensors.load(req["init_inputs"])
        seed = int(req["seed"])
        session.seed_everything(seed)
        model = self.module.ModelNew(*init_inputs)
        if isinstance(model, torch.nn.Module):
            model = model.to(self.device)
            reply["weights"] = _copy_matching_state(model, tensors.load(req["state"], self.device))
            model.eval()
        self.model = model
        reply["builds"] = buildinfo.events()
        return reply

    def run(self, req: dict) -> dict:
        inputs = tensors.load(req["inputs"], self.device)
        start = time.perf_counter()
        with torch.no_grad():
            outputs = self.model(*inputs)
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        tensors.save({"outputs": tensors.detach_clone(outputs), "inputs_after": tensors.detach_clone(list(inputs))},
                     req["outputs"])
        return {"seconds": seconds}

    def prepare_timing(self, req: dict) -> dict:
        self.timing_inputs = tensors.load(req["inputs"], self.device)
        self.timer = make_timer(self.device)
        return {"timer": self.timer.info()}

    def time(self, req: dict) -> dict:
        inputs = self.timing_inputs
        model = self.model

        def call():
            with torch.no_grad():
                model(*inputs)

        return {"times_ms": self.timer.measure(call, int(req["reps"]))}

    def handlers(self):
        return {"load_candidate": self.load_candidate, "run": self.run, "prepare_timing": self.prepare_timing,
                "time": self.time}


def _copy_matching_state(model: torch.nn.Module, reference_state: dict) -> dict:
    """Copies the reference's weights into same-named, same-shaped entries of the candidate."""
    own = model.state_dict()
    copied, skipped = [], []
    with torch.no_grad():
        for name, value in own.items():
            ref = reference_state.get(name)
            if isinstance(ref, torch.Tensor) and ref.shape == value.shape:
                value.copy_(ref)
                copied.append(name)
            else:
                skipped.append(name)
    return {"copied": len(copied), "not_in_reference": skipped[:20], "reference_only": sorted(set(reference_state) - set(own))[:20]}
