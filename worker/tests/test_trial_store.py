"""The reference's trial store: on a device at most one trial's outputs are there at a time; a kept
trial's outputs leave with it and are computed again when it is claimed.

Without a GPU, "on the device" is a tag: the park and unpark functions here wrap a tensor as
("device", t) or ("host", t) and count the copies, which is all the store's bookkeeping looks at.
The real functions (tensors.to_pinned_host, tensors.to_device) run in bench/device_transport_check.sh.
"""

import pytest
import torch

from kforge_worker.exchange.trial_store import TrialStore


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


class Calls:
    """What ReferenceSession._reference_call does: claim the device, then run the call if it has not
    (or again, when the trial's outputs left the device)."""

    def __init__(self):
        self.runs = []

    def __call__(self, store, trial):
        record = store.claim(trial)
        if "outputs" not in record:
            self.runs.append(trial)
            record["outputs"] = ("device", torch.full((4,), 10.0 * trial))
            record["inputs_after"] = ("device", torch.full((4,), trial))
        return record


def _outputs_on_device(store):
    return [n for n, r in store.records.items() if r.get("outputs", ("", None))[0] == "device"]


def test_pipelined_trials_keep_one_trials_outputs_on_the_device_and_park_only_inputs_of_timing_sets():
    moves, dropped, call = Moves(), [], Calls()
    store = _store(moves, dropped)
    # The order the reference sees them in: make 0 (its call runs at once), then make t+1 before check t.
    _make(store, 0)
    call(store, 0)
    for t in range(8):
        _make(store, t + 1)
        assert len(_outputs_on_device(store)) <= 1
        record = call(store, t)
        assert record["outputs"] == ("device", record["outputs"][1]) and float(record["outputs"][1][0]) == 10.0 * t
        store.finish(t)
        assert "inputs_after" not in store.records[t]
        assert len(_outputs_on_device(store)) <= 1
    # Trials 0-2 kept their inputs as drawn, parked once each, and let their outputs go; 3-7 were
    # dropped with their published inputs. Each call ran once.
    assert moves.parked == 3 and moves.unparked == 0 and call.runs == list(range(8))
    assert dropped == [f"inputs_main_{t}" for t in range(3, 8)]
    assert all("outputs" not in store.records[t] and store.records[t]["inputs_before"][0] == "host" for t in range(3))
    with pytest.raises(RuntimeError, match="released after its check"):
        store.claim(5)


def test_timed_checks_run_a_kept_trials_call_again_and_park_its_inputs_once():
    moves, dropped, call = Moves(), [], Calls()
    store = _store(moves, dropped)
    for t in range(3):
        _make(store, t)
        call(store, t)
        store.finish(t)
    call.runs.clear()
    for t in [1, 0, 2, 2, 0, 1]:  # checks of timed repetitions against the timing sets
        record = call(store, t)
        assert record["outputs"][0] == "device" and record["inputs_before"][0] == "device"
        assert float(record["outputs"][1][0]) == 10.0 * t
        assert len(_outputs_on_device(store)) == 1
    assert call.runs == [1, 0, 2, 0, 1]  # once per change of trial (2 then 2 again runs nothing)
    assert moves.parked == 3  # the inputs of each trial copied to the host once, then reused
    assert moves.unparked == 5  # and brought back for each call that runs again


def test_fresh_and_variant_trials_are_dropped_after_their_check():
    moves, dropped, call = Moves(), [], Calls()
    store = _store(moves, dropped)
    _make(store, 0, tag="v1")
    call(store, 0)
    store.finish(0)
    _make(store, 1000)
    call(store, 1000)
    store.finish(1000)
    assert dropped == ["inputs_v1_0", "inputs_main_1000"] and store.resident is None
    assert "outputs" not in store.records[1000] and moves.parked == 0


def test_on_the_host_a_checked_trial_lets_go_of_what_nothing_asks_for_again():
    dropped = []
    store = TrialStore(False, keep=_keep, on_drop=lambda trial, record: dropped.append(record["name"]))
    for t in (2, 4):
        store.add(t, {"tag": "main", "name": f"inputs_main_{t}", "outputs": torch.ones(2),
                      "inputs_before": torch.ones(2), "inputs_after": torch.ones(2)})
        store.finish(t)
    # Trial 2 (a timing set) keeps its outputs and inputs as drawn, in host memory as they were.
    kept = store.claim(2)
    assert set(kept) == {"tag", "name", "outputs", "inputs_before"} and store.resident is None
    # Trial 4 is gone with its published set.
    assert dropped == ["inputs_main_4"] and "outputs" not in store.records[4]
    with pytest.raises(RuntimeError, match="released after its check"):
        store.claim(4)
