"""The untrusted side of an evaluation: imports the candidate (which builds its kernels), runs it on
inputs it is handed and puts back what it returned (sealed memfds, transport.py). It decides nothing: kforge checks the outputs
in the reference process and cross-checks the times reported here against its own clock.

Where the reference's exchange passes device tensors as device buffers (device_transport.py), the
outputs' snapshots and the kept outputs of timed repetitions stay on the device and travel that way.
"""

import time

import torch

from kforge_kernels import buildinfo
from kforge_worker.checks import runtime_checks
from kforge_worker.common import problem, session
from kforge_worker.exchange import device_transport, tensors, transport
from kforge_worker.measure import op_times, profiling, timed_reps
from kforge_worker.measure.timing import make_timer


class CandidateSession:
    def __init__(self):
        self.module = None
        self.model = None
        self.device = "cpu"
        self.timer = None
        self.watch = None  # runtime_checks.Watch: audit hook and integrity snapshot, set before the import
        self.block = None  # timed_reps.Block: the last timed block's kept outputs
        self.correctness_types = set()  # output types the correctness runs returned
        self.peer = None  # transport.Peer: the reference's exchange
        self.peer_path = None

    def load_candidate(self, req: dict) -> dict:
        self.device = req.get("device", "cpu")
        session.setup(self.device, int(req.get("threads", 0)))
        session.set_precision(req.get("precision", "strict"))
        reply = {}
        # kforge's own traffic with the reference happens outside the watched import (it is a socket).
        if self.peer is None or self.peer_path != req["transport"]:
            device = self.device
            self.peer = transport.connect(req["transport"], lambda mode: device_transport.backend(mode, device))
            self.peer_path = req["transport"]
        init_inputs = self.peer.get(req["init_inputs"])
        state = tensors.to_device(self.peer.get(req["state"]), self.device)
        if self.watch is None:
            self.watch = runtime_checks.Watch(req["candidate"], req.get("kernel_modules", []))
        self.watch.begin_import()
        if self.module is None:
            start = time.perf_counter()
            self.module = problem.load_module(req["candidate"], "kforge_candidate")
            reply["import_seconds"] = time.perf_counter() - start
            if not hasattr(self.module, "ModelNew"):
                raise ImportError("the candidate defines no class ModelNew")
        seed = int(req["seed"])
        session.seed_everything(seed)
        model = self.module.ModelNew(*init_inputs)
        if isinstance(model, torch.nn.Module):
            model = model.to(self.device)
            reply["weights"] = _copy_matching_state(model, state)
            model.eval()
        self.model = model
        reply["import_facts"] = {"events": self.watch.end_import(), "tampered": self.watch.tampered(),
                                 "precision_flags": runtime_checks.precision_flags()}
        reply["builds"] = buildinfo.events()
        return reply

    def run(self, req: dict) -> dict:
        inputs = self._fetch(req["inputs"], in_place=bool(req.get("in_place")))
        backend = self.peer.backend  # None on the host path
        before = self._pristine(req["inputs"], inputs, req.get("input_digests"))
        start = time.perf_counter()
        try:
            # Outputs are snapshotted the moment forward returns; facts about the call go to the
            # reference. The snapshot's device buffers are made while the check waits for work the
            # call may have left running.
            on_device = backend is not None
            facts, snapshot = self.watch.forward(self.model, inputs, record_ops=True, snapshots_on_device=on_device,
                                                 meanwhile=(lambda t: backend.stage(t, reuse=True)) if on_device else None,
                                                 settle=bool(req.get("settle", True)))[1:]
            self.correctness_types.update(facts.get("output_types", []))
            seconds = time.perf_counter() - start
            changed = _changed_inputs(list(inputs), before)
            del inputs, before
            # The snapshot and the changed inputs are copied into a fresh memfd, sealed before the
            # reference sees it (device tensors into device buffers, which the reference copies before
            # this returns, kept for the next trial's outputs); only the inputs the call changed (the
            # reference has the others).
            self.peer.put(req["outputs"], {"outputs": snapshot, "inputs_after": changed, "facts": facts}, recycle=True)
        finally:
            if backend is not None:
                backend.discard_staged()
        return {"seconds": seconds}

    def _pristine(self, name: str, inputs: list, given=None) -> list:
        """What a call's inputs were, for _changed_inputs: on the CPU a second private view of the
        set's memfd, never handed out; on a GPU their digests, so that no second copy of a trial's
        inputs takes device memory and only the inputs a call changed travel back. The digests the
        reference took of the set it published (``given``, one per input, None for a value that is
        not a tensor) save reading the inputs once more here."""
        if self.device == "cpu":
            return self.peer.get(name)
        return _digests(inputs, given)

    def prepare_timing(self, req: dict) -> dict:
        if self.peer.backend is not None:
            self.peer.backend.drop_spares()  # the correctness trials' output buffers: timing keeps its own
        self.timing_names = [req["inputs"]] + list(req.get("input_sets", []))
        self.prepared_sets = len(self.timing_names) - 1
        # Lean timing (large trials on the device path) fetches the buffers and sets for each block
        # and lets them go after it, so that they are not on the device while the reference times.
        self.lean = bool(req.get("lean"))
        self.timing_inputs = self.timing_sets = self.current_source = None
        if not self.lean:
            self.timing_inputs, self.timing_sets, self.current_source = self._timing_buffers()
        self.timer = make_timer(self.device)
        return {"timer": self.timer.info()}

    def _timing_buffers(self, schedule=None):
        """(the buffers timed calls run on, the input sets, what a call without a schedule restores):
        the ones kept, else fetched now; for a ``schedule``, only the sets it names (the others None)
        and nothing to restore."""
        if self.timing_inputs is not None:
            return self.timing_inputs, self.timing_sets, self.current_source
        inputs = self._fetch(self.timing_names[0])
        sets = [self._fetch(name) if schedule is None or k in schedule else None
                for k, name in enumerate(self.timing_names[1:])]
        if schedule is not None:
            return inputs, sets, None
        # The first set where it is the same inputs (sets are only ever read), else a copy.
        current = sets[0] if self.timing_names[1:2] == self.timing_names[:1] else [
            t.detach().clone() if isinstance(t, torch.Tensor) else t for t in inputs]
        return inputs, sets, current

    def profiling_inputs(self) -> list:
        return self._timing_buffers(schedule=[])[0]

    def timing_inputs_cmd(self, req: dict) -> dict:
        """Adds an input set never seen before (fresh inputs) to those a schedule names, as set ``set``:
        the one after the prepared sets, which the next fresh set replaces."""
        self.timing_names = self.timing_names[:1 + self.prepared_sets] + [req["path"]]
        if self.timing_sets is not None:
            self.timing_sets = self.timing_sets[:self.prepared_sets] + [self._fetch(req["path"])]
        return {"set": self.prepared_sets}

    def timing_outputs(self, req: dict) -> dict:
        """The kept outputs of the repetitions kforge picked from the last block, for the reference."""
        if self.block is None:
            raise RuntimeError("no timed call has run")
        for pick in req["picks"]:
            self.peer.put(pick["outputs"], {"outputs": self.block.outputs_of(int(pick["rep"]),
                                                                              on_host=self.peer.backend is None)})
        # kforge asks once per block: the kept outputs go, so that they are not on the device while the
        # reference checks the copies it was just given (a fresh block of 7 GiB outputs kept 21 GiB).
        self.block = None
        return {}

    def time(self, req: dict) -> dict:
        """``reps`` timed calls; with ``schedule`` (an input set index per repetition) each call gets
        that set copied into the timing buffers first, otherwise the first prepared set."""
        reps = int(req["reps"])
        schedule = [int(k) for k in req["schedule"]] if req.get("schedule") else None
        if schedule is not None and (len(schedule) != reps or not all(0 <= k < len(self.timing_names) - 1
                                                                      for k in schedule)):
            raise ValueError("the schedule names one known input set per repetition")
        self.block = None  # the last block's kept outputs go before this one's are made
        staging = time.perf_counter_ns()
        inputs, sets, current = self._timing_buffers(schedule)
        block = timed_reps.Block(inputs, sets if schedule is not None else [current], schedule, self.correctness_types,
                                 own_sources=self.lean)
        del sets, current
        # Lean timing fetches the block's buffers and sets here: kforge's clock sees that, the timer does not.
        block.untimed_ns += time.perf_counter_ns() - staging
        model = self.model
        returned = block.returned

        def call():
            with torch.no_grad():
                returned[:] = [model(*inputs)]

        self.watch.begin_timing()
        try:
            times = self.timer.measure(call, reps, before=block.before, after=block.after)
        finally:
            events = self.watch.end_timing()
        self.block = block
        if self.lean:  # the buffers and sets go now, timed as the staging was
            releasing = time.perf_counter_ns()
            block.release_live()
            del inputs, call
            session.release_cached_memory()
            block.untimed_ns += time.perf_counter_ns() - releasing
        return {"times_ms": times, "events": events, "tampered": self.watch.tampered(), **block.facts()}

    def _fetch(self, name: str, in_place: bool = False):
        """An input set: on the host a private copy-on-write view of the reference's sealed memfd; on
        the device path a private copy of its buffers, or with ``in_place`` the buffers themselves
        (a set served once, which its sender never reads again: one trial-sized copy fewer)."""
        return tensors.to_device(self.peer.get(name, in_place=in_place), self.device)

    def handlers(self):
        return {"load_candidate": self.load_candidate, "run": self.run, "prepare_timing": self.prepare_timing,
                "time": self.time, "timing_inputs": self.timing_inputs_cmd, "timing_outputs": self.timing_outputs,
                **profiling.handlers(self), **op_times.handlers(self)}


class _Digest:
    """A tensor input as it was, by its tensors.digest (taken here, or ``known``: the reference's of
    the bytes it published)."""

    def __init__(self, value: torch.Tensor, known=None):
        self.digest = known if known is not None else tensors.digest(value)

    def matches(self, value) -> bool:
        return isinstance(value, torch.Tensor) and tensors.digest(value) == self.digest


def _digests(inputs: list, given=None) -> list:
    """What the inputs were, without a second copy: each tensor's digest (the one ``given`` for its
    position where there is one list per input), other values as they are."""
    known = given if isinstance(given, list) and len(given) == len(inputs) else [None] * len(inputs)
    return [_Digest(v, k if isinstance(k, list) else None) if isinstance(v, torch.Tensor) else v
            for v, k in zip(inputs, known)]


def _changed_inputs(inputs: list, pristine) -> dict:
    """{"changed": {index: value}}: the entries of ``inputs`` that differ from ``pristine`` (the inputs
    as they were, or their _digests; all of them without it), for the reference's in-place check."""
    changed = {}
    for i, value in enumerate(inputs):
        known = pristine is not None and i < len(pristine)
        before = pristine[i] if known else None
        if isinstance(before, _Digest):
            same = before.matches(value)
        elif isinstance(value, torch.Tensor):
            same = isinstance(before, torch.Tensor) and value.device == before.device and timed_reps.same_bits(value, before)
        else:
            same = known and value == before
        if not same:
            changed[i] = value
    return {"changed": changed, "count": len(inputs)}


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
