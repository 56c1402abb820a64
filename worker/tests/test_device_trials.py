"""Device-resident trials end to end between a reference and a candidate session, without a GPU.

Both sessions run in one child process (the candidate's audit hook cannot be removed again) on the
CPU, with fake_device_backend.FakeBackend standing in for the CUDA VMM backend: every input set of a
trial and everything the candidate puts travels as "device" buffers, and the reference keeps at most
one trial's outputs resident. On a machine with a CUDA GPU the same scenario also runs with the
real VMM backend on the GPU (bench/device_transport_check.sh runs it there).
"""

import textwrap

import pytest
import torch

import session_scenario

PROBLEM = """
import torch
class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x) + y
def get_inputs():
    return [torch.randn(64, 32), torch.randn(64, 32)]
def get_init_inputs():
    return []
"""

HONEST = """
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x, y):
        return torch.clamp_min(x, 0) + y
"""

# A problem that hands out the same tensor every time: its inputs as drawn cannot be drawn again.
SAME_TENSORS = """
import torch
X = None
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    global X  # drawn once, where the first call draws (a host tensor would be moved: a fresh copy each time)
    if X is None:
        X = torch.randn(64, 32)
    return [X]
def get_init_inputs():
    return []
"""

# A reference with an operator that writes (an intermediate, in place): nothing tells that it leaves
# its inputs alone, so the inputs after its call are digested every trial.
WRITES = """
import torch
class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x).add_(y)
def get_inputs():
    return [torch.randn(64, 32), torch.randn(64, 32)]
def get_init_inputs():
    return []
"""

MUTATES = """
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x, y):
        out = torch.clamp_min(x, 0) + y
        y.zero_()
        return out
"""

SCENARIO = textwrap.dedent("""
    import json, os, sys
    import torch
    from fake_device_backend import FakeBackend
    from kforge_worker.exchange import device_transport
    from kforge_worker.roles import candidate, reference

    problem, honest, mutates, same_tensors, writes, shared, device, lean = sys.argv[1:9]
    if lean == "lean":  # timing that keeps two sets and nothing of the reference's between blocks
        device_transport.lean = lambda figures: True
    if device == "cpu":  # the fake backend: every tensor counts as a device tensor; one per process's end
        device_transport.select = lambda device, environ=None, supported=None, fits=None: "vmm"
        device_transport.backend = lambda mode, device: FakeBackend() if mode == "vmm" else None
    else:
        os.environ["KFORGE_DEVICE_TRANSPORT"] = "vmm"
    out = {}
    # Who reads a tensor's bytes for a digest (the first caller outside tensors.digest).
    from kforge_worker.exchange import tensors
    digested_by, row_sums = {}, tensors._byte_row_sums
    def counting(t):
        f = sys._getframe(2)
        while f.f_code.co_name.startswith("<"):  # a comprehension's own frame
            f = f.f_back
        digested_by[f.f_code.co_name] = digested_by.get(f.f_code.co_name, 0) + 1
        return row_sums(t)
    tensors._byte_row_sums = counting

    ref = reference.ReferenceSession()
    loaded = ref.load_problem({"device": device, "shared_dir": shared, "problem": problem, "seed": 3})
    out["mode"] = loaded["device_transport"]
    out["lean"] = loaded["lean_timing"]
    out["pipelined_from"] = loaded["pipelined_from"]

    def start(path):
        cand = candidate.CandidateSession()
        cand.load_candidate({"device": device, "transport": loaded["transport"], "init_inputs": loaded["init_inputs"],
                             "state": loaded["state"], "candidate": path, "seed": 3})
        return cand

    cand = start(honest)
    out["candidate_mode"] = cand.peer.device_transport
    checks, resident = [], []
    draws, draw = [], ref.draw_inputs
    ref.draw_inputs = lambda seed: draws.append(seed) or draw(seed)
    made = ref.make_trial({"trial": 0, "seed": 3, "check_determinism": True})
    out["first_reply"] = sorted(made)
    out["first_trial_draws"] = len(draws)
    del draws[:]
    in_place = loaded["lean_timing"]  # kforge's run request: lean trials are served once each
    for t in range(6):  # kforge's pipelined order: trial t+1 is drawn before trial t is checked
        cand.run({"inputs": f"inputs_main_{t}", "outputs": f"out_{t}", "in_place": in_place,
                  "input_digests": made["input_digests"]})
        if t == 4 and device == "cpu":  # a candidate writing the buffers it was handed: nothing the reference reads
            for buf in ref.exchange._published["inputs_main_4"].buffers:
                os.pwrite(buf.fd, b"\\xff" * 256, 0)
        made = ref.make_trial({"trial": t + 1, "seed": 3})
        checks.append(ref.check({"trial": t, "candidate_outputs": f"out_{t}"}))
        # The trials whose outputs are there (on a GPU: on the device).
        resident.append([n for n, r in ref.trials.records.items() if "outputs" in r])
    out["checks"] = [[c["match"], "input_mutation" in c, "precision" in c] for c in checks]
    out["digested_by"] = dict(digested_by)
    out["summed"] = ref.exchange.backend.summed if device == "cpu" else None
    out["draws"] = len(draws)
    out["views"] = cand.peer.backend.views if device == "cpu" else None
    out["refills"] = ref.exchange.backend.refills if device == "cpu" else None
    out["output_refills"] = cand.peer.backend.refills if device == "cpu" else None
    # Trial 6 went into trial 4's recycled buffers, which the candidate wrote: they hold trial 6's inputs.
    seed6 = ref.trial_seed(3, 6)
    out["trial_6_served"] = all(torch.equal(a.cpu(), b.cpu()) for a, b in zip(
        cand.peer.get("inputs_main_6"), draw(seed6)))
    out["resident"] = resident
    out["resident_after_checks"] = ref.trials.resident
    out["kept"] = sorted(n for n in ref.trials.checked if n not in ref.trials.dropped)
    out["dropped"] = sorted(ref.trials.dropped)
    out["outputs_kept"] = sorted(n for n, r in ref.trials.records.items() if "outputs" in r)
    out["published"] = sorted(n for n in ref.exchange._published if n.startswith("inputs_"))
    out["redraw"] = ref.redraw
    out["inputs_kept"] = sorted(n for n, r in ref.trials.records.items() if "inputs_before" in r)

    # A wrong answer is caught on the trial's own values.
    cand.peer.put("wrong", {"outputs": torch.zeros(64, 32), "inputs_after": {"changed": {}, "count": 2}, "facts": {}})
    ref.make_trial({"trial": 1001, "seed": 3})
    out["wrong"] = ref.check({"trial": 1001, "candidate_outputs": "wrong", "timing": True})["match"]

    # Timing: kept sets are drawn again for the baselines, and their calls run again for the checks of
    # timed repetitions.
    sets = [0, 1] if loaded["lean_timing"] else [0, 1, 2]
    schedule = [k % len(sets) for k in (0, 1, 2, 2, 1, 0)]
    ref.prepare_timing({"trial": 0, "compile_baseline": False, "sets": sets})
    out["published_for_timing"] = sorted(n for n in ref.exchange._published if n.startswith("inputs_"))
    cand.prepare_timing({"inputs": "inputs_main_0", "input_sets": [f"inputs_main_{k}" for k in sets],
                         "lean": loaded["lean_timing"]})
    out["baseline"] = len(ref.time({"which": "eager", "reps": 6, "schedule": schedule})["times_ms"])
    out["reference_timing_sets"] = len(ref.timing_sets) + (ref.timing_inputs is not None)
    block = cand.time({"reps": 6, "schedule": schedule})
    out["inputs_changed"] = block["inputs_changed_count"]
    # What the candidate keeps between blocks: its buffers and sets, and the last call's outputs.
    out["candidate_keeps"] = [cand.timing_inputs is not None, cand.block.buffers is not None,
                              bool(cand.block.returned)]
    cand.timing_outputs({"picks": [{"rep": r, "outputs": f"rep_{r}"} for r in range(6)]
                         + [{"rep": 0, "outputs": "rep_0_again"}]})
    out["block_kept_after_picks"] = cand.block is not None  # kforge asks for a block's picks once
    out["timed"] = [ref.check({"trial": k, "candidate_outputs": f"rep_{r}", "timing": True})["match"]
                    for r, k in enumerate(schedule)]
    out["timed_other_set"] = ref.check({"trial": 1, "candidate_outputs": "rep_0_again", "timing": True})["match"]
    # A block on fresh inputs (kforge's order: drawn, added to the candidate's sets, timed after calls
    # on a set it has seen, a seen call and the fresh call checked).
    ref.make_trial({"trial": 1000, "seed": 3})
    fresh = cand.timing_inputs_cmd({"path": "inputs_main_1000"})["set"]
    cand.time({"reps": 3, "schedule": [0, 0, fresh]})
    cand.timing_outputs({"picks": [{"rep": r, "outputs": f"fresh_{r}"} for r in (1, 2)]})
    out["fresh"] = [ref.check({"trial": k, "candidate_outputs": f"fresh_{r}", "timing": True})
                    for r, k in ((1, 0), (2, 1000))]

    # A candidate that changes an input the reference leaves alone is reported.
    ref.reset({})
    loaded = ref.load_problem({"device": device, "shared_dir": shared, "problem": problem, "seed": 3})
    bad = start(mutates)
    made = ref.make_trial({"trial": 0, "seed": 3, "check_determinism": True})
    bad.run({"inputs": "inputs_main_0", "outputs": "m_0", "in_place": in_place, "input_digests": made["input_digests"]})
    out["mutation"] = "input_mutation" in ref.check({"trial": 0, "candidate_outputs": "m_0"})

    ref.reset({})
    ref.load_problem({"device": device, "shared_dir": shared, "problem": same_tensors, "seed": 3})
    ref.make_trial({"trial": 0, "seed": 3})
    out["same_tensors"] = [ref.redraw, "inputs_before" in ref.trials.records[0]]

    ref.reset({})
    loaded = ref.load_problem({"device": device, "shared_dir": shared, "problem": writes, "seed": 3})
    cand = start(honest)
    digested_by.clear()
    writer = []
    for t in range(3):
        made = ref.make_trial({"trial": t, "seed": 3})
        cand.run({"inputs": f"inputs_main_{t}", "outputs": f"w_{t}", "in_place": in_place,
                  "input_digests": made["input_digests"]})
        writer.append(ref.check({"trial": t, "candidate_outputs": f"w_{t}"})["match"])
    out["writer"] = [writer, ref.guard.reference_writes, ref.writes_nothing, digested_by.get("_mutates", 0)]
    print(json.dumps(out))
""")


@pytest.mark.parametrize("lean", ["lean", "full"])
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA GPU: the real VMM backend needs one"))])
def test_device_trials_between_a_reference_and_a_candidate(tmp_path, device, lean):
    out = session_scenario.run(tmp_path, SCENARIO, {"problem": PROBLEM, "honest": HONEST, "mutates": MUTATES,
                                                    "same_tensors": SAME_TENSORS, "writes": WRITES}, device, lean)
    assert out["mode"] == "vmm" and out["candidate_mode"] == "vmm"
    assert out["lean"] is (lean == "lean")
    # Lean trials with room for the float64 audit beside two trials overlap from the first, as small
    # ones do (the rule on its own: test_lean_trials_overlap_from_the_first_where_the_audit_fits_beside_two).
    assert out["pipelined_from"] == 0
    kept = [0, 1] if lean == "lean" else [0, 1, 2]
    assert {"outputs", "output_bytes", "seconds"} <= set(out["first_reply"])
    # Every trial matches, no input mutation; the first is audited against float64.
    assert all(match and not mutation for match, mutation, _ in out["checks"]), out["checks"]
    assert out["checks"][0][2]
    # Trials 1-6 are drawn once each: a correctness trial's call runs on the inputs kept since they
    # were drawn, and the float64 audits of trial 0 and one of trials 1-4 on those inputs after the
    # call, which left them as drawn. Lean trials reach the candidate in place: two input tensors a
    # trial, no copy.
    assert out["draws"] == 6
    # The first trial is drawn, drawn again to learn that get_inputs() repeats itself, and that second
    # drawing is what the determinism check runs on.
    assert out["first_trial_draws"] == 2
    if device == "cpu":
        assert out["views"] == (12 if lean == "lean" else 0)
        # Lean trials 2-6 go into the buffers trials 0-4 were served in (two tensors a set), refilled.
        assert out["refills"] == (10 if lean == "lean" else 0)
        # The candidate's outputs of trials 1-5 go into the buffer its trial-0 outputs were put in.
        assert out["output_refills"] == 5
    assert out["trial_6_served"] is True
    # The published sets' copies took their digests (the fake backend as the real one's kernel does):
    # making a trial reads no input for its digest. The reference's call, whose operators write
    # nothing and which left trial 0's inputs as drawn, has its inputs after the call digested on
    # trial 0 alone (two tensors), not on trials 1-5.
    assert "_make_trial" not in out["digested_by"], out["digested_by"]
    assert out["digested_by"].get("_mutates") == 2, out["digested_by"]
    if device == "cpu":
        assert out["summed"] >= 14  # trials 0-6, two tensors each
    # A reference that writes (an intermediate, in place) has them digested on every trial.
    assert out["writer"] == [[True] * 3, True, False, 6]
    # The trials timing swaps in are kept, later ones released with their inputs. Kept trials' outputs
    # left the device with them (computed again when a timed repetition is checked: out["timed"]).
    assert out["kept"] == kept and out["resident_after_checks"] is None
    assert all(len(r) <= 1 for r in out["resident"]), out["resident"]
    assert out["dropped"] == [t for t in range(6) if t not in kept]
    assert out["outputs_kept"] == []
    # Lean: a trial kept for timing is not served between its check and timing, then served again.
    assert out["published"] == [f"inputs_main_{t}" for t in ([] if lean == "lean" else kept) + [6]]
    assert out["published_for_timing"] == [f"inputs_main_{t}" for t in kept + [6]]
    # Lean timing keeps none of the reference's timing inputs between its blocks.
    assert out["baseline"] == 6
    assert out["reference_timing_sets"] == (0 if lean == "lean" else len(kept) + 1)
    # The last call's outputs go once copied (also without lean timing).
    assert out["candidate_keeps"] == ([False] * 3 if lean == "lean" else [True, True, False])
    assert out["block_kept_after_picks"] is False
    assert out["wrong"] is False
    assert out["inputs_changed"] == 0
    assert out["timed"] == [True] * 6
    assert out["fresh"] and all(c["match"] for c in out["fresh"]), out["fresh"]
    assert out["timed_other_set"] is False  # set 0's outputs are not set 1's: the sets really differ
    assert out["mutation"] is True
    # The inputs as drawn are drawn again from each trial's seed, not kept; a problem that hands out
    # the same tensors every time keeps a copy.
    assert out["redraw"] is True and out["inputs_kept"] == []
    assert out["same_tensors"] == [False, True]


@pytest.mark.parametrize("free_gib, share_gib, output_gib, on_device, expected", [
    (140, None, 0.001, True, 0),   # 5 I + 4 O, the forward's temporaries and the audit fit: from the first
    (140, 60, 0.001, True, 5),     # within the evaluation's reservation they do not
    (60, None, 0.001, True, 5),    # the audit needs the device to itself: after the trials it may pick
    (140, None, 9, True, -1),      # outputs larger than inputs: every trial in turn
    (140, None, 0.001, False, -1), # the lean host path: every trial in turn
])
def test_lean_trials_overlap_from_the_first_where_the_audit_fits_beside_two(monkeypatch, free_gib, share_gib,
                                                                            output_gib, on_device, expected):
    from types import SimpleNamespace

    from kforge_worker.checks import memory_estimate
    from kforge_worker.roles import reference

    gib = 1 << 30
    ref = reference.ReferenceSession()
    ref.lean, ref.device = True, "cuda"
    ref.exchange = SimpleNamespace(mode="vmm" if on_device else "host", close=lambda: None)
    ref.device_share = None if share_gib is None else share_gib * gib
    # 96_HuberLoss at its own size: 8 GiB of inputs, a scalar out, the forward's peak half the inputs.
    figures = {"input_bytes": 8 * gib, "output_bytes": int(output_gib * gib), "forward_peak_bytes": 4 * gib,
               "parameter_bytes": 0}
    monkeypatch.setattr(ref, "_memory_figures", lambda: figures)
    monkeypatch.setattr(memory_estimate, "device_memory",
                        lambda device: {"free_bytes": free_gib * gib, "total_bytes": 141 * gib})
    assert ref._pipelined_from() == expected


def test_a_reader_of_a_trials_inputs_gets_those_the_call_left_as_drawn_else_a_new_drawing():
    from kforge_worker.exchange import tensors
    from kforge_worker.roles import reference

    ref = reference.ReferenceSession()
    drawn = [torch.arange(6.0), torch.ones(3)]
    draws = []
    ref.draw_inputs = lambda seed: draws.append(seed) or [t.clone() for t in drawn]
    left_alone = {"seed": 5, "digest": tensors.digest(drawn), "inputs_after": [t.clone() for t in drawn]}
    assert ref.inputs_before(left_alone) is left_alone["inputs_after"] and draws == []
    ref.inputs_before(left_alone, own=True)  # a caller that may change them gets a drawing of its own
    assert draws == [5]
    changed = {"seed": 6, "digest": tensors.digest(drawn), "inputs_after": [torch.arange(6.0).relu_() - 1, torch.ones(3)]}
    again = ref.inputs_before(changed)  # a reference that changes its inputs in place: drawn again
    assert draws == [5, 6] and changed["mutates_inputs"] is True and torch.equal(again[0], drawn[0])


@pytest.mark.parametrize("free_gib, share_gib, output_gib, keeps", [
    (55, 98, 0.13, True),    # 45_Average_Pooling_2D after its first audit: 85 GiB used, the candidate needs little
    (55, 85, 0.13, False),   # the device's use and the candidate's room would pass the reservation
    (75, 49, 0.13, True),    # 96_HuberLoss after its audit: over its reservation, but half the device is free
    (55, None, 0.13, False), # no reservation known: half the device must be free
    (75, None, 0.13, True),
    (20, 200, 6.0, True),    # outputs as large as inputs: room for three of them and the slack
    (15, 200, 6.0, False),
])
def test_the_reference_keeps_its_cache_between_trials_within_room_for_the_candidate_and_its_reservation(
        monkeypatch, free_gib, share_gib, output_gib, keeps):
    from types import SimpleNamespace

    from kforge_worker.roles import reference

    gib = 1 << 30
    ref = reference.ReferenceSession()
    ref.lean, ref.device = True, "cuda"
    ref.exchange = SimpleNamespace(mode="vmm", close=lambda: None)
    ref.device_share = None if share_gib is None else share_gib * gib
    figures = {"input_bytes": 16 * gib, "output_bytes": int(output_gib * gib),
               "forward_peak_bytes": int(output_gib * gib), "parameter_bytes": 0}
    monkeypatch.setattr(ref, "_memory_figures", lambda: figures)
    assert ref._keeps_cache(free_gib * gib, 140 * gib) is keeps
