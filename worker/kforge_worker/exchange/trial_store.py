"""The reference's trials, and on a device which one of them is there.

A trial's record holds the inputs as drawn (``inputs_before``, or on a device the seed and digest
to draw them again from: reference.py), the inputs after the reference's
call (``inputs_after``), the outputs, the float64 outputs of an audited trial (``outputs64``) and
the facts judged later. Once a trial is checked, what only its check needed goes, and a trial
kforge will not ask for again is dropped with the set it was published in, on either path: on the
host path a trial of KernelBench's 16 GiB problems holds 32 GiB of host memory (its inputs as drawn
and after the call), and keeping every trial's ran a 128 GiB machine out of memory.

On a device at most one trial is *resident*: its tensors are on the device. Before another trial
takes the device, the resident one leaves it. A trial kforge may ask for again (``keep``: the trials
the timing phase swaps in and checks timed repetitions against) keeps what its reference call needs
to run again: the inputs as drawn where they cannot be drawn again from the seed, parked on the host.
Its outputs go: the caller computes them again when the trial is claimed (a redraw and one reference
forward, milliseconds, where copying outputs of several GiB to pinned host memory and back took
seconds). Others are dropped. Parking is lazy and copies once: a trial asked for again before any
other never leaves the device, and a trial parked before keeps its host copy (its inputs as drawn
never change), so leaving the device again costs nothing.
"""

from typing import Callable, Dict, Optional

DEVICE_FIELDS = ("outputs", "inputs_before", "inputs_after", "outputs64")
PARKED_FIELDS = ("inputs_before",)  # what running a trial's reference call again needs


class TrialStore:
    def __init__(self, on_device: bool, park: Callable = None, unpark: Callable = None,
                 keep: Callable[[int, dict], bool] = None, on_drop: Callable[[int, dict], None] = None):
        self.on_device = on_device
        self.records: Dict[int, dict] = {}
        self.resident: Optional[int] = None
        self._park, self._unpark = park, unpark
        self._keep = keep or (lambda trial, record: True)
        self._on_drop = on_drop or (lambda trial, record: None)
        self._host: Dict[int, dict] = {}  # host copies of parked fields: made once, reused at each eviction
        self.dropped = set()  # trials whose tensors are gone
        self.checked = set()  # trials whose check is done (finish)

    def add(self, trial: int, record: dict) -> dict:
        """A new trial; it holds only its inputs until ``claim`` gives it the device for its call."""
        if self.resident == trial:
            self.resident = None
        self.records[trial] = record
        self._host.pop(trial, None)
        self.dropped.discard(trial)
        return record

    def claim(self, trial: int) -> dict:
        """The record of ``trial``, resident, its parked fields back on the device (the previous
        resident trial parked or dropped first); without ``outputs`` when they went with an earlier
        eviction. On the host: the record."""
        record = self.records[trial]
        if trial in self.dropped:
            raise RuntimeError(f"trial {trial}'s tensors were released after its check; nothing asks for "
                               f"them again in an evaluation")
        if not self.on_device:
            return record
        if self.resident is not None and self.resident != trial:
            self._evict(self.resident)
        host = self._host.get(trial, {})
        for field in PARKED_FIELDS:
            if field in host and record.get(field) is host[field]:
                record[field] = self._unpark(host[field])
        self.resident = trial
        return record

    def finish(self, trial: int) -> None:
        """``trial`` was checked: what only its check needed goes; all of it where kforge will not ask again."""
        self.checked.add(trial)
        record = self.records[trial]
        for field in ("inputs_after", "outputs64"):
            record.pop(field, None)
        if not self._keep(trial, record):
            self._drop(trial)

    def note_checked(self, trial: int) -> None:
        """``trial`` was checked and may be checked again: it stays until another trial needs the
        device (then dropped unless kept)."""
        self.checked.add(trial)

    def park_checked(self) -> None:
        """Moves the resident trial off the device once its check is done (kept trials to the host,
        others dropped); a trial still waiting for its check stays."""
        if self.on_device and self.resident is not None and self.resident in self.checked:
            self._evict(self.resident)

    def _evict(self, trial: int) -> None:
        record = self.records[trial]
        if not self._keep(trial, record):
            self._drop(trial)
            return
        host = self._host.setdefault(trial, {})
        for field in DEVICE_FIELDS:
            if field not in record:
                continue
            if field not in PARKED_FIELDS:
                del record[field]
            else:
                if field not in host:
                    host[field] = self._park(record[field])
                record[field] = host[field]
        if self.resident == trial:
            self.resident = None

    def _drop(self, trial: int) -> None:
        record = self.records[trial]
        for field in DEVICE_FIELDS:
            record.pop(field, None)
        self._host.pop(trial, None)
        self.dropped.add(trial)
        if self.resident == trial:
            self.resident = None
        self._on_drop(trial, record)

    def others_with_inputs(self, trial: int) -> list:
        """Records of other trials whose inputs are still kept (on the device or parked) or can be
        drawn again, by trial."""
        return [r for n, r in sorted(self.records.items())
                if n != trial and ("inputs_before" in r or "digest" in r)]
