"""What the device path holds at once, measured: device_transport.device_bytes' count, checked.

The reference and a candidate session run in one child process on the CPU with
fake_device_backend.FakeBackend standing in for the CUDA VMM backend, so every tensor they hold
stands for device memory (trials parked on the host excepted) and every live buffer for a VMM
allocation. A forward hook on both models adds up, right after each call (outputs alive), the
bytes of every live storage of at least a MiB: correctness trials in kforge's order (pipelined, or
in turn with lean timing), then timing blocks with their checks. This sees the forwards only, not
the transient peaks between them (digests, comparisons, copies): the count itself comes from the
peaks measured on a GPU with KFORGE_MEMORY_LOG (bench/device_transport_check.sh fullsize).
"""

import json
import textwrap

import pytest

import session_scenario

ROWS, COLS = 1024, 1024  # 4 MiB in, 4 MiB out
PROBLEM = f"""
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn({ROWS}, {COLS})]
def get_init_inputs():
    return []
"""

HONEST = """
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.clamp_min(x, 0)
"""

SCENARIO = textwrap.dedent("""
    import gc, json, os, sys
    import torch
    from fake_device_backend import FakeBackend
    from kforge_worker.exchange import device_transport, tensors
    from kforge_worker.roles import candidate, reference

    problem, honest, shared, lean = sys.argv[1:5]
    backend = FakeBackend()
    device_transport.select = lambda device, environ=None, supported=None, fits=None: "vmm"
    device_transport.backend = lambda mode, device: backend if mode == "vmm" else None
    device_transport.lean = lambda figures: lean == "lean"

    host = set()  # storages of trials parked on the host: not device memory

    def park(obj):
        copy = tensors.detach_clone(obj)
        host.update(tensors.storages(copy))
        return copy

    tensors.to_pinned_host = park

    def device_bytes():
        seen, total = set(), 0
        for o in gc.get_objects():
            if isinstance(o, torch.Tensor):
                s = o.untyped_storage()
                if s.nbytes() >= 1 << 20 and s.data_ptr() not in seen | host:
                    seen.add(s.data_ptr())
                    total += s.nbytes()
        return total + sum(os.fstat(b.fd).st_size for b in backend.exported if not b.closed)

    peaks = {"correctness": 0, "timing": 0}
    phase = ["correctness"]

    def note(module=None, args=(), output=None):
        if any(isinstance(a, torch.Tensor) and a.dtype == torch.float64 for a in args):
            return  # the float64 audit's copy of the model (on the host with lean timing)
        peaks[phase[0]] = max(peaks[phase[0]], device_bytes())

    ref = reference.ReferenceSession()
    loaded = ref.load_problem({"device": "cpu", "shared_dir": shared, "problem": problem, "seed": 3})
    ref.model.register_forward_hook(note)
    cand = candidate.CandidateSession()
    cand.load_candidate({"device": "cpu", "transport": loaded["transport"], "init_inputs": loaded["init_inputs"],
                         "state": loaded["state"], "candidate": honest, "seed": 3})
    cand.model.register_forward_hook(note)

    ref.make_trial({"trial": 0, "seed": 3, "check_determinism": True})
    for t in range(5):  # kforge's order: pipelined (trial t+1 drawn before trial t is checked), lean in turn
        cand.run({"inputs": f"inputs_main_{t}", "outputs": f"out_{t}"})
        if t + 1 < 5 and not loaded["lean_timing"]:
            ref.make_trial({"trial": t + 1, "seed": 3})
        assert ref.check({"trial": t, "candidate_outputs": f"out_{t}"})["match"]
        if t + 1 < 5 and loaded["lean_timing"]:
            ref.make_trial({"trial": t + 1, "seed": 3})

    phase[0] = "timing"
    sets = [0, 1] if loaded["lean_timing"] else [0, 1, 2]
    block = 2 if loaded["lean_timing"] else 5
    schedule = [k % len(sets) for k in range(block)]
    ref.prepare_timing({"trial": 0, "compile_baseline": False, "sets": sets})
    cand.prepare_timing({"inputs": "inputs_main_0", "input_sets": [f"inputs_main_{k}" for k in sets],
                         "lean": loaded["lean_timing"]})
    for round in range(2):
        ref.time({"which": "eager", "reps": block, "schedule": schedule})
        cand.time({"reps": block, "schedule": schedule})
        picks = [0, block - 1]
        cand.timing_outputs({"picks": [{"rep": r, "outputs": f"rep_{round}_{r}"} for r in picks]})
        note()  # the kept outputs and the reference's copies of the picked ones
        for r in picks:
            assert ref.check({"trial": sets[schedule[r]], "candidate_outputs": f"rep_{round}_{r}", "timing": True})["match"]
    # A block on fresh inputs, in kforge's order (timing_phase.cc, time_fresh_set): the reference draws
    # the set, the candidate adds it, times a timing block's calls on seen sets (with lean timing one
    # set twice) and then the fresh call, hands over a seen call's outputs and the fresh call's, and the
    # reference checks both.
    phase[0] = "fresh"
    peaks["fresh"] = 0
    ref.make_trial({"trial": 1000, "seed": 3})
    fresh = cand.timing_inputs_cmd({"path": "inputs_main_1000"})["set"]
    seen = [0, 0] if loaded["lean_timing"] else schedule
    cand.time({"reps": len(seen) + 1, "schedule": seen + [fresh]})
    picks = [(0, sets[seen[0]]), (len(seen), 1000)]
    cand.timing_outputs({"picks": [{"rep": r, "outputs": f"fresh_{r}"} for r, _ in picks]})
    note()
    for r, trial in picks:
        assert ref.check({"trial": trial, "candidate_outputs": f"fresh_{r}", "timing": True})["match"]
    print(json.dumps({"peaks": peaks, "lean": loaded["lean_timing"]}))
""")


def _peaks(tmp_path, lean: str) -> dict:
    out = session_scenario.run(tmp_path, SCENARIO, {"problem": PROBLEM, "honest": HONEST}, lean)
    assert out["lean"] is (lean == "lean")
    return out["peaks"]


@pytest.mark.parametrize("lean", ["lean", "full"])
def test_the_device_path_holds_no_more_than_its_count(tmp_path, lean):
    from kforge_worker.exchange import device_transport

    trial = ROWS * COLS * 4
    figures = {"input_bytes": trial, "output_bytes": trial, "forward_peak_bytes": trial}
    peaks = _peaks(tmp_path, lean)
    monkey_lean = device_transport.lean
    try:
        device_transport.lean = lambda f: lean == "lean"
        counted = device_transport.device_bytes(figures)
    finally:
        device_transport.lean = monkey_lean
    # Measured at the busiest moments: within what device_bytes counts, and at least the trial-sized
    # sets that must be there (published, drawn, outputs), so the measure sees what it should.
    assert max(peaks.values()) <= counted, (peaks, counted)
    print(json.dumps({"sets": {phase: round(peak / trial, 1) for phase, peak in peaks.items()}, "counted": counted / trial}))
    if lean == "lean":  # trials in turn: published, drawn, the candidate's copy and outputs; 5 I + 4 O counted
        assert peaks["correctness"] >= 4 * trial and peaks["timing"] >= 5 * trial, peaks
        # The fresh block's last call: three published sets, buffers, the fresh set, two kept outputs and
        # the call's (its kept copy comes after the hook): the seen set is gone after its second call.
        assert 7 * trial <= peaks["fresh"] <= 8 * trial, peaks
        assert counted == 9 * trial
    else:  # 11 I + 11 O
        assert peaks["correctness"] >= 7 * trial and peaks["timing"] >= 7 * trial, peaks
        assert counted == 22 * trial and peaks["timing"] > 12 * trial and peaks["fresh"] > peaks["timing"], peaks
