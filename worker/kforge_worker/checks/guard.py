"""The reference process's defences against cheating candidates, in one place.

ReferenceSession calls into a Guard at a few points (a trial is made, outputs are checked) and
exposes its commands:

    static_check  the candidate's source, read as text (static_checks.py)
    calibrate     null kernels against this problem's check (calibration.py)
    sol           FLOPs, minimum bytes and the device's speed of light (sol.py)

Per trial it keeps the reference's own facts and judges what the candidate process reported about
its call (reference_checks.py). The precision audit (a float64 reference, precision.py) costs several
forward passes' worth of host work, so it runs on two main trials rather than all: the first, and one
of trials 1-4 picked at random in this process (a candidate cannot tell which, so being precise only
on the first call does not pass). Every trial is still compared within tolerance.
"""

import copy
import json
import os
import random

import torch

from kforge_worker.checks import calibration, memory_estimate, precision, reference_checks, sol, static_limits
from kforge_worker.common import ops, session
from kforge_worker.exchange import device_transport, tensors
from kforge_worker.checks.runtime_checks import _leaves, _op_recorder


# Calibration reports of this process, by problem (path, content, overrides, shapes, device, policy).
_CALIBRATIONS: dict = {}


class Guard:
    LAST_AUDITED_TRIAL = 4  # the float64 audit's second trial is one of 1..LAST_AUDITED_TRIAL

    def __init__(self):
        self.allowed = set()
        self.reference_ops = set()
        # FLOPs of the reference's GEMMs and convolutions by library kind, per shape (trial tag): what the
        # candidate's allowed library calls may do at most (ops.delegation).
        self.reference_flops = {}
        self.reference_writes = None  # whether the reference's first main call ran an operator that writes an argument
        self.calibration = None
        self.tightened = False
        self.degenerate = False
        self.independence = reference_checks.Independence()
        self.policy = "strict"
        self.precision_audit = True
        # Main trials audited against float64: the first and one later one, never revealed.
        self.audited_trials = {0, random.SystemRandom().randint(1, self.LAST_AUDITED_TRIAL)}
        self._model64 = None  # (the reference model, its float64 copy)

    # -- commands -------------------------------------------------------------------------------
    def static_check(self, ref, req: dict) -> dict:
        # In a disposable child with limits: no candidate source can crash or stall this process.
        self.allowed = ops.canonical_set(req.get("allowed_torch_calls", []))
        return static_limits.run_isolated(req["candidate"], req["problem"], req.get("allowed_torch_calls", []),
                                          kernel_loops=req.get("kernel_loops", []),
                                          kernel_modules=req.get("kernel_modules", []))

    def calibrate(self, ref, req: dict) -> dict:
        # The report describes the problem at its sizes, not a candidate: a reference process kept for
        # the next evaluation of the same problem (docs/isolation.md) calibrates it once.
        key = json.dumps([req.get("problem"), req.get("problem_sha256"), req.get("overrides", {}),
                          int(req.get("shapes", 0)), ref.device, self.policy], sort_keys=True, default=str)
        cached = _CALIBRATIONS.get(key)
        if cached is not None:
            report = copy.deepcopy(cached)
            report["calibrated_with_seed"] = cached.get("calibrated_with_seed", int(req["seed"]))
            report["reused"] = True
        else:
            report = calibration.calibrate(ref.model, ref.draw_inputs, lambda k: ref.trial_seed(int(req["seed"]), k),
                                           ref._forward)
            report["calibrated_with_seed"] = int(req["seed"])
        self.calibration = report
        self.tightened = report["tightened"]
        self.degenerate = report["degenerate"]
        report["summary"] = calibration.summary(report)
        if cached is not None:
            report["summary"] += " (calibrated once for this problem, by an earlier evaluation)"
        if self.tightened and int(req.get("shapes", 0)) == 0 and req.get("problem"):
            from kforge_worker.common import problem

            overrides = {k: problem.parse_value(v) if isinstance(v, str) else v
                         for k, v in req.get("overrides", {}).items()}
            report["variants"] = problem.shape_variants(req["problem"], overrides, 1, aligned=True)
        report["extra_trials"] = calibration.EXTRA_TRIALS if self.tightened else 0
        report["max_trials"] = calibration.MAX_TRIALS
        if cached is None:
            _CALIBRATIONS[key] = copy.deepcopy(report)
        return report

    def sol(self, ref, req: dict) -> dict:
        trial = ref.trial(int(req.get("trial", 0)))
        inputs = tensors.copy_to(ref.inputs_before(trial), ref.device)
        try:
            work = sol.count_work(ref.model, inputs)
        except Exception as exc:
            work, note = {"flops": 0, "pointwise": None}, f"FLOPs not counted: {type(exc).__name__}: {exc}"[:300]
        else:
            note = None
        nbytes = sol.min_bytes(ref.model, inputs, trial["outputs"])
        peaks = sol.device_peaks(ref.device, req.get("peaks_cache"), bool(req.get("remeasure_peaks")))
        floats = [t for t in _leaves(trial["outputs"]) if t.is_floating_point()]
        dtype = floats[0].dtype if floats else torch.float32
        out = sol.speed_of_light(work["flops"], nbytes, dtype, peaks, self.policy, work["pointwise"])
        if note:
            out["note"] = note
        out["peaks"] = {"flops_per_s": peaks["flops"], "bandwidth": peaks["bandwidth"]}
        return out

    def hard_bound(self, ref, req: dict) -> dict:
        """The physical speed-of-light bound (sol.hard_bound): outputs plus the inputs they depend on.
        Asked for only when a candidate beats the FLOP bound, since finding the dependences costs one
        reference forward per input."""
        trial = ref.trial(int(req.get("trial", 0)))
        others = ref.trials.others_with_inputs(int(req.get("trial", 0)))
        if others:
            other_inputs = ref.inputs_before(others[0])
        else:
            session.seed_everything(ref.trial_seed(int(req["seed"]), 20_000))
            other_inputs = tensors.to_device(list(ref.module.get_inputs()), ref.device)
        inputs = tensors.copy_to(list(ref.inputs_before(trial)), ref.device)
        dependent = sol.dependent_inputs(ref._forward, inputs, tensors.to_device(list(other_inputs), ref.device),
                                         trial["outputs"])
        peaks = sol.device_peaks(ref.device, req.get("peaks_cache"))
        out = sol.hard_bound(inputs, trial["outputs"], dependent, peaks)
        out["degenerate"] = self.degenerate
        return out

    def handlers(self, ref) -> dict:
        return {"static_check": lambda req: self.static_check(ref, req),
                "hard_bound": lambda req: self.hard_bound(ref, req),
                "calibrate": lambda req: self.calibrate(ref, req),
                "sol": lambda req: self.sol(ref, req)}

    # -- hooks from ReferenceSession --------------------------------------------------------------
    def forward(self, ref, inputs, trial: int, tag: str):
        """The reference forward of a trial; the first main trial also records the aten operators."""
        if trial == 0 and tag == "main":
            seen, writes, flops = set(), set(), {}
            with _op_recorder(seen, writes, flops):
                out = ref._forward(inputs)
            self.reference_ops = ops.canonical_set(seen)
            self.reference_writes = bool(writes)
            self.reference_flops = {tag: flops}
        elif tag not in self.reference_flops:
            flops = {}
            with _op_recorder(set(), None, flops):
                out = ref._forward(inputs)
            self.reference_flops[tag] = flops
        else:
            out = ref._forward(inputs)
        return out

    def after_trial(self, ref, record: dict, inputs, outputs) -> None:
        record["facts"] = reference_checks.reference_facts(outputs, inputs)

    def _float64_reference(self, ref, record: dict):
        """The float64 reference of a trial, built when its check needs it (None where the model
        cannot run in float64). With lean timing (trials of a GiB and more on the device path) it is
        computed on the device only where its free memory holds the float64 forward (inputs, peak and
        parameters twice over), else on the host."""
        if "outputs64" not in record:
            where = self._float64_device(ref)
            if where == "cpu" and not self._fits_host(ref, record):
                record["outputs64"] = None
                return None
            if self._model64 is None or self._model64[0] is not ref.model or self._model64[2] != where:
                self._model64 = None  # the last copy goes before the next is made
                try:
                    self._model64 = (ref.model, precision.float64_model(ref.model).to(where), where)
                except Exception:
                    self._model64 = (ref.model, None, where)  # not copyable: no float64 reference, no audit
            model64 = self._model64[1]
            outputs64 = None if model64 is None else precision.float64_outputs(
                model64, tensors.to_device(ref.inputs_before(record), where), on_device=ref.on_device and where != "cpu")
            record["outputs64"] = None if outputs64 is None else precision.Float64Reference(record["outputs"],
                                                                                             outputs64)
        return record["outputs64"]

    @staticmethod
    def _fits_host(ref, record: dict) -> bool:
        """Whether the float64 forward fits the host's available memory (MemAvailable, or the memory
        cgroup's room); where it does not, the trial's ``audit_skipped`` says why. A 1 GB softmax's
        audit beside the kept trials and the candidate ran a 24 GiB machine out of memory, and the
        reference's death was taken for a problem too large for the host."""
        need = Guard.float64_bytes(ref)
        free = memory_estimate.device_memory("cpu")["free_bytes"]
        if device_transport.within_share(need, free):
            record.pop("audit_skipped", None)
            return True
        gib = 1 << 30
        record["audit_skipped"] = (f"its float64 reference needs about {need / gib:.1f} GiB of host memory and "
                                   f"{free / gib:.1f} GiB are available")
        return False

    @staticmethod
    def float64_bytes(ref) -> int:
        """What the float64 forward holds: the problem's inputs, peak and parameters, twice over (0
        where the meta device could not trace the problem)."""
        figures = ref._memory_figures() or {}
        return 2 * sum(int(figures.get(k, 0)) for k in ("input_bytes", "forward_peak_bytes", "parameter_bytes"))

    @staticmethod
    def _float64_device(ref) -> str:
        if not ref.lean:
            return ref.device
        need = Guard.float64_bytes(ref)
        # This process's cached, unused blocks count as free: its allocator hands them back to the
        # driver itself when an allocation would fail. Emptying the cache here cost an audited trial
        # of 36_RMSNorm_ tens of milliseconds on an H200, and the float64 forward then allocated afresh.
        free = memory_estimate.device_memory(ref.device)["free_bytes"] + session.cached_unused_bytes()
        return ref.device if need and device_transport.within_share(need, free) else "cpu"

    def judge(self, ref, trial_no: int, record: dict, got: dict, req: dict) -> dict:
        """Findings and precision audit for one check; a tightened-tolerance mismatch when it applies."""
        extra = {}
        timing = bool(req.get("timing"))
        if not timing:
            findings = reference_checks.judge_run(got.get("facts"), record.get("facts", {}), self.reference_ops,
                                                  self.allowed, self.policy,
                                                  self.reference_flops.get(record.get("tag", "main")))
            imp = req.get("import_facts")
            if imp:
                findings += reference_checks.judge_import(imp.get("events", []), imp.get("tampered", []),
                                                          imp.get("precision_flags"), self.policy)
            extra["findings"] = findings
            facts = got.get("facts")
            if isinstance(facts, dict) and facts.get("ops_recorded"):
                # The target's allowed library calls the candidate kept (a GEMM before its own epilogue).
                extra["library_calls"] = sorted(ops.canonical_set(facts.get("aten_ops", [])) & self.allowed)
        return extra

    def after_match(self, ref, trial_no: int, record: dict, got: dict, req: dict, reply: dict) -> None:
        """Checks that only make sense once the outputs are within the default tolerance."""
        outputs = got["outputs"]
        identical = reply["stats"]["identical"]  # no error at all: nothing for the scaled check to find
        if self.tightened and not identical:
            why = calibration.scaled_check(record["outputs"], outputs)
            if why:
                reply["match"] = False
                reply["mismatch"] = {"reason": "tightened", "message": f"{why} (tightened after calibration)"}
                return
        if req.get("timing"):
            return
        if self.precision_audit and record.get("main", True) and trial_no in self.audited_trials:
            audit = precision.audit(record["outputs"], outputs, self._float64_reference(ref, record), self.policy)
            if audit:
                reply["precision"] = audit
            elif "audit_skipped" in record:
                reply.setdefault("findings", []).append(
                    {"name": "precision", "verdict": "warn",
                     "message": f"the float64 precision audit of trial {trial_no} was skipped: {record['audit_skipped']}"})
        if not self.degenerate:
            finding = self.independence.add(trial_no, record["outputs"], outputs, identical)
            if finding:
                reply.setdefault("findings", []).append(finding)


def peaks_cache_dir() -> str:
    build = os.environ.get("KFORGE_BUILD_CACHE", "")
    return os.path.join(os.path.dirname(build), "peaks") if build else ""
