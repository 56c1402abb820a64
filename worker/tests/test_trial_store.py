"""The reference's trial store: on a device at most one trial's outputs are there at a time.

Without a GPU, "on the device" is a tag: the park and unpark functions here wrap a tensor as
("device", t) or ("host", t) and count the copies, which is all the store's bookkeeping looks at.
The real functions (tensors.to_pinned_host, tensors.to_device) run in bench/device_transport_check.sh.
"""

import pytest
import torch

from kforge_worker.trial_store import TrialStore


class Moves:
    def __init__(self):
        self.parked = 0
        self.unparked = 0

    def park(self, value):
        assert value[0] == "device"
        self.parked += 1
        return ("host", value[1].clone())

    def unpark(self, value):
        assert value[0] == "host"
        self.unparked += 1
        return ("device", value[1].clone())


def _keep(trial, record):
    return record["tag"] == "main" and (trial < 3 or trial >= 2000)


def _store(moves, dropped):
    return TrialStore(True, park=moves.park, unpark=moves.unpark, keep=_keep,
                      on_drop=lambda trial, record: dropped.append(record["name"]))


def _make(store, trial, tag="main"):
    store.add(trial, {"tag": tag, "name": f"inputs_{tag}_{trial}", "inputs_before": ("device", torch.full((4,), trial))})


def _call(store, trial, need=("outputs", "inputs_before")):
    """What ReferenceSession._reference_call does: claim the device, then run the call if it has not."""
    record = store.claim(trial, need)
    if "outputs" not in record:
        record["outputs"] = ("device", torch.full((4,), 10.0 * trial))
        record["inputs_after"] = ("device", torch.full((4,), trial))
    return record


def _outputs_on_device(store):
    return [n for n, r in store.records.items() if r.get("outputs", ("", None))[0] == "device"]


def test_pipelined_trials_keep_one_trials_outputs_on_the_device_and_park_the_timing_sets():
    moves, dropped = Moves(), []
    store = _store(moves, dropped)
    # The order the reference sees them in: make 0 (its call runs at once), then make t+1 before check t.
    _make(store, 0)
    _call(store, 0)
    for t in range(8):
        _make(store, t + 1)
        assert len(_outputs_on_device(store)) <= 1
        record = _call(store, t)
        assert record["outputs"] == ("device", record["outputs"][1]) and float(record["outputs"][1][0]) == 10.0 * t
        store.finish(t)
        assert "inputs_after" not in store.records[t]
        assert len(_outputs_on_device(store)) <= 1
    # Trials 0-2 were parked once each (outputs and inputs); 3-7 dropped with their published inputs.
    assert moves.parked == 6 and moves.unparked == 0
    assert dropped == [f"inputs_main_{t}" for t in range(3, 8)]
    assert all(store.records[t]["outputs"][0] == "host" for t in range(3))
    with pytest.raises(RuntimeError, match="released after its check"):
        store.claim(5)


def test_timed_checks_bring_back_outputs_only_and_park_without_copying_again():
    moves, dropped = Moves(), []
    store = _store(moves, dropped)
    for t in range(3):
        _make(store, t)
        _call(store, t)
        store.finish(t)
    for t in [1, 0, 2, 2, 0, 1]:  # checks of timed repetitions against the timing sets
        record = store.claim(t, ("outputs",))
        assert record["outputs"][0] == "device" and record["inputs_before"][0] == "host"
        assert float(record["outputs"][1][0]) == 10.0 * t
        assert len(_outputs_on_device(store)) == 1
    assert moves.parked == 6  # outputs and inputs of each trial copied to the host once, then reused
    assert moves.unparked == 5  # one upload per change of trial (2 then 2 again needs none)


def test_fresh_and_variant_trials_are_dropped_after_their_check():
    moves, dropped = Moves(), []
    store = _store(moves, dropped)
    _make(store, 0, tag="v1")
    _call(store, 0)
    store.finish(0)
    _make(store, 1000)
    _call(store, 1000, ("outputs",))
    store.finish(1000)
    assert dropped == ["inputs_v1_0", "inputs_main_1000"] and store.resident is None
    assert "outputs" not in store.records[1000] and moves.parked == 0


def test_on_the_host_records_stay_as_they_are():
    store = TrialStore(False)
    store.add(4, {"tag": "main", "name": "inputs_main_4", "outputs": torch.ones(2), "inputs_after": torch.ones(2)})
    store.finish(4)
    assert torch.equal(store.claim(4)["inputs_after"], torch.ones(2)) and store.resident is None
