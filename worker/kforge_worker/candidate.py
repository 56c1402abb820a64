"""The untrusted side of an evaluation: imports the candidate (which builds its kernels), runs it on
inputs it is handed and puts back what it returned (sealed memfds, transport.py). It decides nothing: kforge checks the outputs
in the reference process and cross-checks the times reported here against its own clock.

Where the reference's exchange passes device tensors as device buffers (device_transport.py), the
outputs' snapshots and the kept outputs of timed repetitions stay on the device and travel that way.
"""

import time

import torch

from kforge_kernels import buildinfo
from kforge_worker import (device_transport, problem, profiling, runtime_checks, session, tensors, timed_reps,
                           transport)
from kforge_worker.timing import make_timer


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
        inputs = self._fetch(req["inputs"])
        on_device = self.peer.backend is not None
        # A second private copy, never handed out: what the inputs were (a view of the same memfd on
        # the host, a copy of the same buffers on the device).
        pristine = self.peer.get(req["inputs"]) if self.device == "cpu" or on_device else None
        start = time.perf_counter()
        # Outputs are snapshotted the moment forward returns; facts about the call go to the reference.
        _, facts, snapshot = self.watch.forward(self.model, inputs, record_ops=True, snapshots_on_device=on_device)
        self.correctness_types.update(facts.get("output_types", []))
        seconds = time.perf_counter() - start
        # The snapshot and the inputs are copied into a fresh memfd, sealed before the reference sees it
        # (device tensors into fresh device buffers, which the reference copies before this returns);
        # only the inputs the call changed (the reference has the others as they were).
        self.peer.put(req["outputs"], {"outputs": snapshot, "inputs_after": _changed_inputs(list(inputs), pristine),
                                       "facts": facts})
        return {"seconds": seconds}

    def prepare_timing(self, req: dict) -> dict:
        self.timing_inputs = self._fetch(req["inputs"])
        self.timing_sets = [self._fetch(name) for name in req.get("input_sets", [])]
        self.prepared_sets = len(self.timing_sets)
        # What a time without a schedule restores before each call (on the device, like the buffers).
        self.current_source = [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in self.timing_inputs]
        self.timer = make_timer(self.device)
        return {"timer": self.timer.info()}

    def timing_inputs_cmd(self, req: dict) -> dict:
        """Adds an input set never seen before (fresh inputs) to those a schedule names, as set ``set``:
        the one after the prepared sets, which the next fresh set replaces."""
        fresh = self._fetch(req["path"])
        self.timing_sets = self.timing_sets[:self.prepared_sets] + [fresh]
        return {"set": self.prepared_sets}

    def timing_outputs(self, req: dict) -> dict:
        """The kept outputs of the repetitions kforge picked from the last block, for the reference."""
        if self.block is None:
            raise RuntimeError("no timed call has run")
        for pick in req["picks"]:
            self.peer.put(pick["outputs"], {"outputs": self.block.outputs_of(int(pick["rep"]),
                                                                              on_host=self.peer.backend is None)})
        return {}

    def time(self, req: dict) -> dict:
        """``reps`` timed calls; with ``schedule`` (an input set index per repetition) each call gets
        that set copied into the timing buffers first, otherwise the first prepared set."""
        reps = int(req["reps"])
        schedule = [int(k) for k in req["schedule"]] if req.get("schedule") else None
        if schedule is not None and (len(schedule) != reps or not all(0 <= k < len(self.timing_sets)
                                                                      for k in schedule)):
            raise ValueError("the schedule names one known input set per repetition")
        sources = self.timing_sets if schedule is not None else [self.current_source]
        self.block = None  # the last block's kept outputs go before this one's are made
        block = timed_reps.Block(self.timing_inputs, sources, schedule, self.correctness_types)
        inputs = self.timing_inputs
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
        return {"times_ms": times, "events": events, "tampered": self.watch.tampered(), **block.facts()}

    def _fetch(self, name: str):
        """An input set: on the host a private copy-on-write view of the reference's sealed memfd."""
        return tensors.to_device(self.peer.get(name), self.device)

    def handlers(self):
        return {"load_candidate": self.load_candidate, "run": self.run, "prepare_timing": self.prepare_timing,
                "time": self.time, "timing_inputs": self.timing_inputs_cmd, "timing_outputs": self.timing_outputs,
                **profiling.handlers(self)}


def _changed_inputs(inputs: list, pristine) -> dict:
    """{"changed": {index: value}}: the entries of ``inputs`` that differ from ``pristine`` (all of
    them without it), for the reference's in-place check."""
    changed = {}
    for i, value in enumerate(inputs):
        before = pristine[i] if pristine is not None and i < len(pristine) else None
        same = (isinstance(value, torch.Tensor) and isinstance(before, torch.Tensor) and value.device == before.device
                and timed_reps.same_bits(value, before)) or (
            not isinstance(value, torch.Tensor) and pristine is not None and i < len(pristine) and value == before)
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
