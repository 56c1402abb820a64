"""The trusted side of an evaluation: builds the reference, draws inputs, checks outputs, times PyTorch.

Reference outputs stay in this process's memory and are never written anywhere, so the candidate
process (which runs untrusted code) has nothing to copy from. Inputs go to the candidate, and its
outputs come back, as sealed memfds (transport.py): no file, no unpickling, and nothing the
candidate could change after handing it over. kforge (C++) turns the numbers into a verdict.

With the device transport (device_transport.py) trials stay where the computation runs: inputs are
drawn on the device and cross as device buffers, the reference's call of a trial after the first runs
when its check needs the outputs, outputs are compared there, and at most one trial's tensors are on
the device at a time (trial_store.py). There a trial's inputs as drawn are not kept but drawn again
from its seed when a command needs them (checked against their digest): one trial-sized set fewer on
the device, and nothing to park on the host.
"""

import gc
import time

import torch

from kforge_worker.checks import compare, memory_estimate
from kforge_worker.common import problem, session
from kforge_worker.exchange import device_transport, tensors, transport, trial_store
from kforge_worker.measure import baselines, profiling, timed_reps
from kforge_worker.checks.guard import Guard
from kforge_worker.common.errors import ProblemError
from kforge_worker.measure.timing import make_timer

# The trials kforge may ask for again after their check (src/eval/timing_phase.cc): the first three
# main trials (two with lean timing) and the extra sets drawn for timing are swapped in and checked
# against during timing; trial 0 also serves sol, hard_bound and profiles. Fresh-input trials (1000+)
# are checked once.
TIMING_EXTRA_TRIALS = 2000
TIMING_SETS, LEAN_TIMING_SETS = 3, 2
CACHE_ROOM_SLACK = 1 << 30  # beside the candidate's part of a trial: its context's growth, kernels' scratch


class ReferenceSession:
    def __init__(self):
        self.module = None
        self.model = None
        self.compiled = None
        self.device = "cpu"
        self.trials = trial_store.TrialStore(False)
        self.guard = Guard()  # static checks, calibration, precision audit, speed of light
        self.timer = None
        self.shared_dir = "."
        self.device_share = None  # bytes kforge reserved for the evaluation (load_problem's device_share_bytes)
        self.exchange = None  # transport.Exchange: where the candidate fetches inputs and puts outputs
        self.redraw = None  # whether get_inputs() draws the same values again from a seed (device path, lean host path)
        self.spare_drawing = None  # (seed, inputs): the first trial's second drawing, until its determinism check
        self.writes_nothing = None  # whether the first main trial showed that the reference leaves its inputs alone
        # On a GPU, at sizes where every trial-sized set counts (device_transport.lean): trials in turn,
        # two timing sets, nothing of the reference's kept between timing blocks. On the host path too:
        # there each set of a 16 GiB problem is host memory as well as device memory.
        self.lean = False
        self.timing_inputs = None
        # The shapes and dtypes of a timed trial's outputs, for untimed_cost: the outputs themselves would
        # be one output set more than the device count allows for (device_transport.device_bytes).
        self.untimed_outputs = None
        self.timing_trials = []
        # Trial inputs derive from this, never from the published seed alone (session.trial_seed); a
        # reset draws a new one, so every evaluation a kept reference serves has its own.
        self.input_secret = session.input_secret()

    # -- commands ---------------------------------------------------------------------------
    def load_problem(self, req: dict) -> dict:
        self.device = req.get("device", "cpu")
        session.setup(self.device, int(req.get("threads", 0)))
        session.set_precision(req.get("precision", "strict"))
        self.guard.policy = req.get("precision", "strict")
        self.shared_dir = req["shared_dir"]
        self.device_share = req.get("device_share_bytes")
        path = transport.socket_path(self.shared_dir)
        overrides = {k: problem.parse_value(v) if isinstance(v, str) else v for k, v in req.get("overrides", {}).items()}
        self.module = problem.load_problem(req["problem"], overrides)
        self.problem_source = (req["problem"], overrides)
        mode = device_transport.select(self.device, fits=self._fits_on_device)
        if self.exchange is None or self.exchange.path != path or self.exchange.mode != mode:
            self._close_exchange()
            self.exchange = transport.Exchange(path, device_transport.backend(mode, self.device))
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
        if self.trials.on_device:  # the last shape's trials: their buffers go with them
            for record in self.trials.records.values():
                self.exchange.unpublish(record["name"])
        self.exchange.drop_spares()
        self.lean = self._lean()
        session.set_cache_rule(self._keeps_cache if self.on_device and self.lean else None)
        self.trials = self._new_store()
        self.redraw = None
        self.writes_nothing = None
        self.compiled = None
        variants = []
        if int(req.get("variants", 0)) > 0:
            variants = problem.shape_variants(req["problem"], overrides, int(req["variants"]))
        return {
            "torch": torch.__version__,
            "variants": variants,
            "transport": self.exchange.path,
            "device_transport": self.exchange.mode,
            "lean_timing": self.lean,
            "pipelined_from": self._pipelined_from(),
            "init_inputs": f"init_{tag}",
            "state": f"state_{tag}",
            "globals": _size_globals(self.module),
            "parameters": sum(p.numel() for p in self.model.parameters()),
        }

    @property
    def on_device(self) -> bool:
        return self.exchange is not None and self.exchange.mode != "host"

    def _lean(self) -> bool:
        """Whether trials are lean (self.lean): on the device path, or on the host path on a GPU."""
        return ((self.on_device or self.device.startswith("cuda"))
                and device_transport.lean(self._memory_figures() or {}))

    def _pipelined_from(self) -> int:
        """The first trial kforge may overlap with its neighbours (the candidate runs trial t+1
        while this process checks trial t and draws trial t+2), or -1 for none. Small trials overlap
        from the first. Lean trials on the device path overlap where their outputs are no larger than
        their inputs: two trials at once then hold 4 I + 4 O and 3 I + 6 O at most, within the 5 I +
        4 O the device path is admitted with (device_transport). They do so from the first where the
        device's free memory, and what kforge reserved for the evaluation (``device_share_bytes``),
        also hold the float64 audit's forward beside that; otherwise they run alone through the last
        trial the audit may pick (Guard.LAST_AUDITED_TRIAL), which then has the device to itself.
        Either way the switch is fixed before any trial, so it tells the candidate nothing about
        which trial was audited. The lean host path runs every trial alone."""
        if not self.lean:
            return 0
        figures = self._memory_figures() or {}
        if self.on_device and 0 < int(figures.get("output_bytes", 0)) <= int(figures.get("input_bytes", 0)):
            room = memory_estimate.device_memory(self.device)["free_bytes"]
            if self.device_share is not None:
                room = min(room, int(self.device_share))
            if device_transport.within_share(device_transport.device_bytes(figures) + Guard.float64_bytes(self), room):
                return 0
            return Guard.LAST_AUDITED_TRIAL + 1
        return -1

    def _keeps_cache(self, free: int, total: int) -> bool:
        """Whether this process keeps its cached blocks between a lean correctness trial's commands on
        the device path: while the device has room for the candidate's part of a trial (its outputs,
        their snapshot and export, the forward's temporaries), and either half the device is free
        (the rule of a process that knows nothing of its evaluation) or the device's use with that
        room stays within what kforge reserved for the evaluation (``device_share``; other
        evaluations' use counts too, which only hands blocks back sooner). Half the device alone had
        the first trial of 45_Average_Pooling_2D on an H200 hand back the 64 GiB its float64 audit
        left (24-29 ms) and the second audit take 32 GiB afresh; the reservation alone had
        96_HuberLoss, whose audit holds more than its reservation, hand back 56 GiB twice."""
        half_free = session.half_free(free, total)
        figures = self._memory_figures() or {}
        if self.device_share is None or not figures:
            return half_free
        o = int(figures.get("output_bytes", 0))
        room = 3 * o + max(0, int(figures.get("forward_peak_bytes", 0)) - o) + CACHE_ROOM_SLACK
        return free >= room and (half_free or (total - free) + room <= int(self.device_share))

    def _memory_figures(self):
        """memory_estimate.trace's figures for the loaded problem (traced once per process), or None
        where the meta device cannot run it."""
        try:
            return memory_estimate.traced(*self.problem_source)
        except Exception:
            return None

    def _fits_on_device(self) -> bool:
        figures = self._memory_figures()  # none: the host path, which needs no estimate
        return figures is not None and device_transport.fits_on_device(
            figures, memory_estimate.device_memory(self.device)["free_bytes"])

    def trial_seed(self, base_seed: int, trial: int) -> int:
        return session.trial_seed(self.input_secret, base_seed, trial)

    def draw_inputs(self, seed: int) -> list:
        """A set of inputs for ``seed``, drawn as the trials' are: where the computation runs."""
        return draw_on_device(self.module, seed, self.device)

    def make_trial(self, req: dict) -> dict:
        try:
            return self._make_trial(req)
        finally:
            self.spare_drawing = None  # a second drawing the first trial did not use goes with it

    def _make_trial(self, req: dict) -> dict:
        trial = int(req["trial"])
        tag = req.get("tag", "main")
        seed = self.trial_seed(int(req["seed"]), trial)
        name = f"inputs_{tag}_{trial}"
        record = {"tag": tag, "name": name, "main": tag == "main" and trial < session.FIRST_TIMING_TRIAL}
        if self.on_device and self.lean:
            self.trials.park_checked()  # one trial's outputs on the device at a time: the last checked one's go
        # Drawn where the computation runs on either path: KernelBench's torch.rand of 16 GiB takes a
        # CPU far longer than a GPU's generator and the host path's copy into its memfd together.
        inputs = self._unshared(self.draw_inputs(seed))
        reply = {"inputs": name, "input_bytes": tensors.nbytes(inputs)}
        if self.on_device:
            # The candidate gets copies in buffers of their own; this process never reads the buffers
            # again. A lean correctness trial's set is served once: its check recycles the buffers for
            # the next such set (never for a timing set: the candidate may still map them). The copies
            # take the inputs' digests as they read them (one read of the set fewer).
            sums = {}
            self.exchange.publish(name, inputs, device=True, reuse=self._served_once(trial), sums=sums)
            # The candidate checks its inputs after its call against these digests instead of taking
            # its own first. The inputs as drawn are drawn again when needed (inputs_before), or,
            # where get_inputs() cannot do that, kept as a copy.
            entries = [tensors.digest(v, sums) for v in inputs]
            record.update(seed=seed, digest=[d for entry in entries for d in entry])
            reply["input_digests"] = [entry if isinstance(v, torch.Tensor) else None for v, entry in zip(inputs, entries)]
            if not self._redraws(record, inputs):
                record["inputs_before"] = tensors.copy_to(inputs, self.device)
        else:
            if self.lean:  # timing draws its sets again on the device instead of copying them from here
                record.update(seed=seed, digest=tensors.digest(inputs))
                self._redraws(record, inputs)
            # Kept unchanged, on the host: a view of exactly the sealed copy the candidate gets.
            record["inputs_before"] = self.exchange.publish(name, inputs)
        # What the reference's own call runs on (and may change). A timing trial's on the lean device
        # path are drawn again when its call runs: kept, they would sit beside a timing block's sets.
        # A correctness trial's stay: the candidate uses its set's buffers in place, so they take the
        # device memory the candidate's own copy took before, and its call need not draw them again.
        if not (self.on_device and self.lean and self.redraw and trial >= session.FIRST_TIMING_TRIAL):
            record["inputs"] = inputs
        del inputs
        self.trials.add(trial, record)
        if self.on_device and trial > 0:
            return reply  # the call runs when the check needs its outputs: one trial on the device at a time
        record = self._reference_call(trial)
        reply.update({"outputs": tensors.describe(record["outputs"]), "seconds": record["seconds"],
                      "output_bytes": tensors.nbytes(record["outputs"])})
        if req.get("check_determinism"):
            again = self._forward(self.inputs_before(record, own=True))
            try:
                compare.compare(record["outputs"], again)
            except compare.Mismatch as m:
                raise ProblemError(f"the reference is nondeterministic: two runs on the same inputs differ ({m.report['message']})")
        return reply

    def _served_once(self, trial: int) -> bool:
        """Whether a trial's set is served once, used in place by the candidate and recycled by its check
        (lean correctness trials on the device path)."""
        return self.on_device and self.lean and trial < session.FIRST_TIMING_TRIAL

    def _reference_call(self, trial: int) -> dict:
        """The trial's record with the reference's outputs, on the device where trials live there (its
        call runs now if it has not yet, or again if its outputs left the device with an eviction)."""
        record = self.trials.claim(trial)
        if "outputs" in record:
            return record
        inputs = record.pop("inputs") if "inputs" in record else self.inputs_before(record, own=True)
        start = time.perf_counter()
        outputs = self.guard.forward(self, inputs, trial, record["tag"])
        record["seconds"] = time.perf_counter() - start
        # This process's own tensors are kept as they are: only its model could change them later, so
        # only outputs that are views of the model's state are copied (on the host path: host copies).
        state = {t.untyped_storage().data_ptr() for t in self.model.state_dict().values() if isinstance(t, torch.Tensor)}
        record["outputs"] = tensors.kept(outputs, state, on_device=self.on_device)
        record["inputs_after"] = tensors.kept(inputs, state, on_device=self.on_device)
        self.guard.after_trial(self, record, inputs, outputs)
        self._note_mutation(trial, record)
        return record

    def _note_mutation(self, trial: int, record: dict) -> None:
        """Whether a main trial's call changed its inputs, where the first main trial already tells:
        a reference whose first call left its inputs as drawn and ran no operator that writes to an
        argument (in place or ``out=``, by its schema) cannot change them through torch, and later
        trials then take no digest of the inputs after its call (one read of a trial's inputs fewer;
        17 GB at 45_Average_Pooling_2D's size). Any other reference is checked every trial."""
        if not record.get("main"):
            return
        if trial == 0:
            self.writes_nothing = self.guard.reference_writes is False and not _mutates(record)
        elif self.writes_nothing:
            record["mutates_inputs"] = False

    def inputs_before(self, record: dict, own: bool = False) -> list:
        """A trial's inputs as drawn: the kept copy (with ``own``, a copy of it the caller may change);
        for a caller that only reads them, the inputs the reference's call ran on where that call left
        them as drawn and they are still where the computation runs (the float64 audit of a lean
        trial then draws no second set beside the first); else drawn again from the trial's seed."""
        if "inputs_before" in record:
            return tensors.copy_to(record["inputs_before"], self.device) if own else record["inputs_before"]
        if not own and self._left_as_drawn(record):
            return record["inputs_after"]
        return self._draw_again(record)

    def _left_as_drawn(self, record: dict) -> bool:
        after = record.get("inputs_after")
        device = torch.device(self.device).type
        return (after is not None and "digest" in record
                and all(t.device.type == device for t in tensors.leaves(after)) and not _mutates(record))

    def _draw_again(self, record: dict) -> list:
        spare, self.spare_drawing = self.spare_drawing, None
        if spare is not None and spare[0] == record["seed"]:
            return spare[1]  # the first trial's second drawing, its digest already compared
        inputs = self.draw_inputs(record["seed"])
        if tensors.digest(inputs) != record["digest"]:
            raise ProblemError("get_inputs() drew different values for the same seed a second time: "
                               "a trial's inputs cannot be drawn again")
        return inputs

    def _redraws(self, record: dict, inputs: list) -> bool:
        """Whether inputs as drawn can be drawn again instead of kept, decided at the first trial: a
        second drawing from the same seed gives the same values in storages of its own (a problem
        that hands out the same tensors every time would give back what a call changed)."""
        if self.redraw is None:
            again = self.draw_inputs(record["seed"])
            self.redraw = (not tensors.storages(again) & tensors.storages(inputs)
                           and tensors.digest(again) == record["digest"])
            if self.redraw and self.on_device:  # the determinism check's inputs, instead of a third drawing
                self.spare_drawing = (record["seed"], again)
        return self.redraw

    def trial(self, trial: int) -> dict:
        """A trial's record with its reference outputs, for the commands that read them."""
        return self._reference_call(trial)

    def check(self, req: dict) -> dict:
        number = int(req["trial"])
        if self.lean and self.on_device and not req.get("timing") and number in self.trials.records:
            # The candidate's call is over: its set is not served again (a trial kept for timing is
            # published afresh by prepare_timing). Its buffers are kept for the next trial's set
            # (allocating and releasing a trial-sized buffer costs about as much as filling it).
            self.exchange.unpublish(self.trials.records[number]["name"], recycle=self._served_once(number))
        try:
            return self._check(number, self._reference_call(number), req)
        finally:
            if req.get("timing"):  # kept as it is: a fresh block checks two calls on the same trial
                self.trials.note_checked(number)
            else:
                self.trials.finish(number)

    def _check(self, number: int, trial: dict, req: dict) -> dict:
        got = self.exchange.take(req["candidate_outputs"])
        if not isinstance(got, dict) or "outputs" not in got:
            return {"match": False, "mismatch": {"reason": "protocol", "message": "the candidate process wrote no outputs"}}
        reply = {"match": True, **self.guard.judge(self, number, trial, got, req)}
        try:
            reply["stats"] = compare.compare(trial["outputs"], got["outputs"], tol_scale=float(req.get("tol_scale", 1.0)))
        except compare.Mismatch as m:
            return {**reply, "match": False, "mismatch": m.report}
        self.guard.after_match(self, number, trial, got, req, reply)
        if req.get("timing"):
            return reply  # a timed repetition's outputs only: its inputs are checked in the candidate's process
        # The caller sees the inputs after the call: they must be what the reference leaves them as
        # (both left them alone: nothing to compare).
        reported = got.get("inputs_after")
        if _mutates(trial) or not _unchanged(reported, len(trial["inputs_after"])):
            try:
                compare.compare(trial["inputs_after"], _inputs_after(self.inputs_before(trial), reported), path="input")
            except compare.Mismatch as m:
                reply["input_mutation"] = {"message": m.report["message"], "reference_mutates_inputs": _mutates(trial)}
        return reply

    def prepare_timing(self, req: dict) -> dict:
        trial = self.trial(int(req.get("trial", 0)))
        self.timing_trials = [int(req.get("trial", 0))] + [int(t) for t in req.get("sets", [])]
        if self.lean and self.on_device:  # the timing sets are served again, in fresh buffers, drawn from their seeds
            self.exchange.drop_spares()  # the correctness trials' recycled buffers go first
            for t in dict.fromkeys(self.timing_trials):
                record = self.trials.records[t]
                self.exchange.publish(record["name"], self.inputs_before(record, own=True), device=True)
        self.timing_inputs = self.inputs_before(trial, own=True)
        mutates = _mutates(trial)
        # The baselines are timed on the same input sets, swapped the same way, as the candidate. Lean
        # timing keeps none of them between blocks: each is drawn again where it is swapped in.
        self.timing_sets = [] if self.lean else [tensors.to_device(self.inputs_before(self.trials.records[t]), self.device)
                                                 for t in self.timing_trials[1:]]
        self.timer = make_timer(self.device)
        reply = {"timer": self.timer.info(), "mutates_inputs": mutates}
        if not self.lean:  # lean timing fetches sets per block: no bound of this kind (docs/checks.md)
            self.untimed_outputs = [(t.shape, t.dtype) for t in tensors.leaves(trial["outputs"])]
            reply["untimed_ms_per_rep"] = untimed_cost_ms(self.timing_inputs, self.timing_sets or [self.timing_inputs],
                                                          trial["outputs"], self.device)
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
        if self.lean:
            self.timing_inputs = None
            self.trials.park_checked()  # the checks of timed repetitions bring back the outputs they need
        return reply

    def time(self, req: dict) -> dict:
        fn_model = self.compiled if req["which"] == "compile" else self.model
        if fn_model is None:
            raise RuntimeError(f"no {req['which']} baseline prepared")
        schedule = [int(k) for k in req.get("schedule") or []]
        inputs = self._drawn_set(0) if self.lean else self.timing_inputs
        swaps = bool(schedule) and len(self.timing_trials) > 1

        def swap(rep: int) -> None:
            k = schedule[rep]
            source = self._drawn_set(k + 1) if self.lean else self.timing_sets[k]
            with timed_reps.one_thread():  # as the candidate's worker swaps (timed_reps.Block)
                timed_reps.write_inputs(inputs, source)

        def call():
            with torch.no_grad():
                fn_model(*inputs)

        reply = {"times_ms": self.timer.measure(call, int(req["reps"]), before=swap if swaps else None)}
        if hasattr(self.timer, "device_state"):  # GPU clocks right after the block
            reply["device_state"] = self.timer.device_state()
        return reply

    def profiling_inputs(self) -> list:
        return self._drawn_set(0) if self.lean else self.timing_inputs

    def _drawn_set(self, index: int) -> list:
        """Lean timing: timing set ``index`` (0: the inputs of prepare_timing's trial) drawn again, on
        the host path too where get_inputs() can (milliseconds on a GPU, where copying a 16 GiB set
        from host memory takes seconds)."""
        record = self.trials.records[self.timing_trials[index]]
        return self._draw_again(record) if self.redraw else self.inputs_before(record, own=True)

    def reset(self, req: dict) -> dict:
        """Forgets the last evaluation (model, trials, baselines), so the process can serve the next one."""
        self._close_exchange()
        self.__init__()
        session.set_cache_rule(None)
        gc.unfreeze()  # what the last evaluation froze (session.FREEZE_AFTER) can be collected again
        gc.collect()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        return {}

    def untimed_cost(self, req: dict) -> dict:
        """The untimed work of one repetition measured now (untimed_cost_ms): kforge asks again when a
        candidate's block is far below its clock floor, so that a load that started after
        prepare_timing raises the bound as it slows the candidate's copies."""
        if self.untimed_outputs is None or self.timing_inputs is None:
            raise RuntimeError("no timing prepared with a measure of the untimed work")
        # Written tensors of the outputs' sizes: copying pages never written would read the zero page.
        outputs = [torch.zeros(shape, dtype=dtype, device=self.device) for shape, dtype in self.untimed_outputs]
        return {"untimed_ms_per_rep": untimed_cost_ms(self.timing_inputs, self.timing_sets or [self.timing_inputs],
                                                      outputs, self.device)}

    def handlers(self):
        return {"load_problem": self.load_problem, "reset": self.reset, "make_trial": self.make_trial, "check": self.check,
                "prepare_timing": self.prepare_timing, "time": self.time, "untimed_cost": self.untimed_cost,
                **self.guard.handlers(self),
                **profiling.handlers(self), **memory_estimate.handlers()}

    def _unshared(self, inputs: list) -> list:
        """A problem may return the same tensors on every call: a forward that changes them in place
        would change what earlier trials kept (a live tensor's storage is never reused, so a shared
        pointer means the same tensor). Only then are they copied."""
        kept = set()
        for record in self.trials.records.values():
            kept |= tensors.storages([record.get(f) for f in ("inputs", "outputs", "inputs_after")])
        return tensors.detach_clone(inputs) if tensors.storages(inputs) & kept else inputs

    def _new_store(self) -> trial_store.TrialStore:
        device = self.device
        sets = LEAN_TIMING_SETS if self.lean else TIMING_SETS
        keep = lambda trial, record: record["tag"] == "main" and (trial < sets or trial >= TIMING_EXTRA_TRIALS)
        on_drop = lambda trial, record: self.exchange.unpublish(record["name"])
        if not self.on_device:
            return trial_store.TrialStore(False, keep=keep, on_drop=on_drop)
        return trial_store.TrialStore(True, park=tensors.to_pinned_host, unpark=lambda obj: tensors.to_device(obj, device),
                                      keep=keep, on_drop=on_drop)

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


def untimed_cost_ms(buffers: list, sets: list, outputs, device: str, samples: int = 5) -> float:
    """What the candidate's worker does between two timed repetitions, done here by the trusted
    process on tensors of the same sizes (timed_reps.Block: the scheduled set copied into the
    buffers, the outputs copied aside, the inputs compared with the set): the fastest of ``samples``
    runs after a first one that is not counted (the first copy in a process takes tens of ms), in ms:
    load only ever adds time. kforge believes a candidate's own account of that time (``untimed_ms``) only up to
    a few times this (src/eval/clock_floor.h)."""
    buffers = [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in buffers]
    outs = tensors.leaves(outputs)
    spent = []
    for k in range(samples + 1):
        source = sets[k % len(sets)]
        start = time.perf_counter_ns()
        with timed_reps.one_thread():  # as the candidate's worker does it (timed_reps.Block)
            timed_reps.write_inputs(buffers, source)
            kept = [timed_reps._device_copy(t) for t in outs]
            same = [timed_reps.same_bits(b, s) for b, s in zip(buffers, source)
                    if isinstance(b, torch.Tensor) and isinstance(s, torch.Tensor)]
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        spent.append((time.perf_counter_ns() - start) / 1e6)
        del kept, same
    return min(spent[1:])


def draw_on_device(module, seed: int, device: str) -> list:
    """A trial's inputs drawn where the computation runs: get_inputs() with ``device`` as the default
    of its factory calls (tensors it puts on the CPU explicitly are moved). The values come from the
    device's generator (CUDA's Philox): the same seed gives the same values on the same kind of
    device, on either data path. A get_inputs that cannot run that way is drawn on the CPU and moved."""
    session.seed_everything(seed)
    try:
        with torch.device(device):
            inputs = list(module.get_inputs())
    except Exception:
        session.seed_everything(seed)
        inputs = list(module.get_inputs())
    return tensors.to_device(inputs, device)


def _mutates(record: dict) -> bool:
    """Whether the reference's own call changed its inputs (worked out once, while both are kept; by
    digest where the inputs as drawn are not kept)."""
    if "mutates_inputs" not in record:
        if "inputs_before" in record:
            record["mutates_inputs"] = compare.same_values(record["inputs_before"], record["inputs_after"]) is not None
        else:
            record["mutates_inputs"] = tensors.digest(record["inputs_after"]) != record["digest"]
    return record["mutates_inputs"]


def _unchanged(reported, count: int) -> bool:
    """Whether a candidate reported that its call left all ``count`` inputs as they were."""
    return isinstance(reported, dict) and reported.get("changed") == {} and reported.get("count") == count


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
