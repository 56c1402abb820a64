"""The trusted side of an evaluation: builds the reference, draws inputs, checks outputs, times PyTorch.

Reference outputs stay in this process's memory and are never written anywhere, so the candidate
process (which runs untrusted code) has nothing to copy from. Inputs go to the candidate, and its
outputs come back, as sealed memfds (transport.py): no file, no unpickling, and nothing the
candidate could change after handing it over. kforge (C++) turns the numbers into a verdict.
"""

import gc
import time

import torch

from kforge_worker import baselines, compare, memory_estimate, problem, profiling, session, tensors, timed_reps, transport
from kforge_worker.guard import Guard
from kforge_worker.errors import ProblemError
from kforge_worker.timing import make_timer


class ReferenceSession:
    def __init__(self):
        self.module = None
        self.model = None
        self.compiled = None
        self.device = "cpu"
        self.trials = {}
        self.guard = Guard()  # static checks, calibration, precision audit, speed of light
        self.timer = None
        self.shared_dir = "."
        self.exchange = None  # transport.Exchange: where the candidate fetches inputs and puts outputs

    # -- commands ---------------------------------------------------------------------------
    def load_problem(self, req: dict) -> dict:
        self.device = req.get("device", "cpu")
        session.setup(self.device, int(req.get("threads", 0)))
        session.set_precision(req.get("precision", "strict"))
        self.guard.policy = req.get("precision", "strict")
        self.shared_dir = req["shared_dir"]
        path = transport.socket_path(self.shared_dir)
        if self.exchange is None or self.exchange.path != path:
            self._close_exchange()
            self.exchange = transport.Exchange(path)
        overrides = {k: problem.parse_value(v) if isinstance(v, str) else v for k, v in req.get("overrides", {}).items()}
        self.module = problem.load_problem(req["problem"], overrides)
        seed = int(req["seed"])
        session.seed_everything(seed)
        init_inputs = self.module.get_init_inputs()
        session.seed_everything(seed)
        self.model = self.module.Model(*init_inputs).to(self.device).eval()
        tag = req.get("tag", "main")
        self.exchange.publish(f"init_{tag}", list(init_inputs))
        self.exchange.publish(f"state_{tag}", dict(self.model.state_dict()))
        if tag == "main":
            self.exchange.forget_received()
        self.trials = {}
        self.compiled = None
        variants = []
        if int(req.get("variants", 0)) > 0:
            variants = problem.shape_variants(req["problem"], overrides, int(req["variants"]))
        return {
            "torch": torch.__version__,
            "variants": variants,
            "transport": self.exchange.path,
            "init_inputs": f"init_{tag}",
            "state": f"state_{tag}",
            "globals": _size_globals(self.module),
            "parameters": sum(p.numel() for p in self.model.parameters()),
        }

    def make_trial(self, req: dict) -> dict:
        trial = int(req["trial"])
        session.seed_everything(session.trial_seed(int(req["seed"]), trial))
        inputs = list(self.module.get_inputs())
        inputs = tensors.to_device(inputs, self.device)
        # A problem may return the same tensors on every call: a forward that changes them in place
        # would change what earlier trials kept (a live tensor's storage is never reused, so a shared
        # pointer means the same tensor). Only then are they copied.
        if tensors.storages(inputs) & self._kept_storages():
            inputs = tensors.detach_clone(inputs)
        name = f"inputs_{req.get('tag', 'main')}_{trial}"
        # Kept unchanged, on the host: a view of exactly the sealed copy the candidate gets.
        before = self.exchange.publish(name, inputs)
        start = time.perf_counter()
        outputs = self.guard.forward(self, inputs, trial, req.get("tag", "main"))
        seconds = time.perf_counter() - start
        reply = {"inputs": name, "outputs": tensors.describe(outputs), "seconds": seconds,
                 "input_bytes": tensors.nbytes(inputs), "output_bytes": tensors.nbytes(outputs)}
        if req.get("check_determinism"):
            again = self._forward(tensors.to_device(tensors.detach_clone(before), self.device))
            try:
                compare.compare(outputs, again)
            except compare.Mismatch as m:
                raise ProblemError(f"the reference is nondeterministic: two runs on the same inputs differ ({m.report['message']})")
        # This process's own tensors are kept as they are: only its model could change them later, so
        # only outputs that are views of the model's state are copied (on a device: host copies).
        state = {t.untyped_storage().data_ptr() for t in self.model.state_dict().values() if isinstance(t, torch.Tensor)}
        self.trials[trial] = {"outputs": tensors.kept(outputs, state), "inputs_before": before,
                              "inputs_after": tensors.kept(inputs, state),
                              "main": req.get("tag", "main") == "main" and trial < 1000}
        self.guard.after_trial(self, self.trials[trial], inputs, outputs)
        return reply

    def check(self, req: dict) -> dict:
        trial = self.trials[int(req["trial"])]
        got = self.exchange.take(req["candidate_outputs"])
        if not isinstance(got, dict) or "outputs" not in got:
            return {"match": False, "mismatch": {"reason": "protocol", "message": "the candidate process wrote no outputs"}}
        reply = {"match": True, **self.guard.judge(self, int(req["trial"]), trial, got, req)}
        try:
            reply["stats"] = compare.compare(trial["outputs"], got["outputs"], tol_scale=float(req.get("tol_scale", 1.0)))
        except compare.Mismatch as m:
            return {**reply, "match": False, "mismatch": m.report}
        self.guard.after_match(self, int(req["trial"]), trial, got, req, reply)
        if req.get("timing"):
            return reply  # a timed repetition's outputs only: its inputs are checked in the candidate's process
        # The caller sees the inputs after the call: they must be what the reference leaves them as.
        try:
            compare.compare(trial["inputs_after"], _inputs_after(trial["inputs_before"], got.get("inputs_after")),
                            path="input")
        except compare.Mismatch as m:
            ref_mutates = compare.same_values(trial["inputs_before"], trial["inputs_after"]) is not None
            reply["input_mutation"] = {"message": m.report["message"], "reference_mutates_inputs": ref_mutates}
        return reply

    def prepare_timing(self, req: dict) -> dict:
        trial = self.trials[int(req.get("trial", 0))]
        self.timing_inputs = tensors.to_device(tensors.detach_clone(trial["inputs_before"]), self.device)
        # The baselines are timed on the same input sets, swapped the same way, as the candidate.
        self.timing_sets = [tensors.to_device(self.trials[int(t)]["inputs_before"], self.device)
                            for t in req.get("sets", [])]
        self.timer = make_timer(self.device)
        mutates = compare.same_values(trial["inputs_before"], trial["inputs_after"]) is not None
        reply = {"timer": self.timer.info(), "mutates_inputs": mutates}
        if req.get("compile_baseline", True):
            start = time.perf_counter()
            try:
                self.compiled = baselines.compile_model(self.model, self.device)
                with torch.no_grad():
                    self.compiled(*self.timing_inputs)
                reply["compile_seconds"] = time.perf_counter() - start
            except Exception as exc:
                self.compiled = None
                reply["compile_error"] = f"{type(exc).__name__}: {exc}"[:2000]
        return reply

    def time(self, req: dict) -> dict:
        fn_model = self.compiled if req["which"] == "compile" else self.model
        if fn_model is None:
            raise RuntimeError(f"no {req['which']} baseline prepared")
        inputs = self.timing_inputs
        schedule = [int(k) for k in req.get("schedule") or []]
        sets = self.timing_sets

        def swap(rep: int) -> None:
            timed_reps.write_inputs(inputs, sets[schedule[rep]])

        def call():
            with torch.no_grad():
                fn_model(*inputs)

        reply = {"times_ms": self.timer.measure(call, int(req["reps"]), before=swap if schedule and sets else None)}
        if hasattr(self.timer, "device_state"):  # GPU clocks right after the block
            reply["device_state"] = self.timer.device_state()
        return reply

    def reset(self, req: dict) -> dict:
        """Forgets the last evaluation (model, trials, baselines), so the process can serve the next one."""
        self._close_exchange()
        self.__init__()
        gc.collect()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        return {}

    def handlers(self):
        return {"load_problem": self.load_problem, "reset": self.reset, "make_trial": self.make_trial, "check": self.check,
                "prepare_timing": self.prepare_timing, "time": self.time, **self.guard.handlers(self),
                **profiling.handlers(self), **memory_estimate.handlers()}

    def _kept_storages(self) -> set:
        return set().union(*(tensors.storages([t["outputs"], t["inputs_after"]]) for t in self.trials.values()))

    def _close_exchange(self) -> None:
        if self.exchange is not None:
            self.exchange.close()
            self.exchange = None

    def _forward(self, inputs):
        with torch.no_grad():
            out = self.model(*inputs)
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        return out


def _inputs_after(before: list, reported):
    """The candidate's inputs after its call: ``before`` with the entries it reported changed."""
    if not (isinstance(reported, dict) and isinstance(reported.get("changed"), dict)
            and reported.get("count") == len(before)):
        return reported  # not in the expected form: compared as it is, and found different
    after = list(before)
    for index, value in reported["changed"].items():
        if not (isinstance(index, int) and 0 <= index < len(after)):
            return reported
        after[index] = value
    return after


def _size_globals(module) -> dict:
    return {k: v for k, v in vars(module).items()
            if not k.startswith("_") and isinstance(v, (int, float)) and not isinstance(v, bool)}
