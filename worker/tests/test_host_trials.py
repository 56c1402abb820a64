"""Lean trials on the host path, between a reference and a candidate session, without a GPU.

On a GPU the host path is lean at KernelBench's largest sizes (a 16 GiB input set is host memory as
well as device memory): trials run in turn, a checked trial kforge will not ask for again lets go of
its sealed set, and timing draws its two sets again from their seeds. Here the CPU stands in for
the GPU (ReferenceSession._lean patched); both sessions run in one child process, since the
candidate's audit hook cannot be removed again.
"""

import textwrap

import session_scenario
from test_device_trials import HONEST, PROBLEM

SCENARIO = textwrap.dedent("""
    import json, sys
    from kforge_worker.roles import candidate, reference

    problem, honest, shared = sys.argv[1:4]
    reference.ReferenceSession._lean = lambda self: True
    ref = reference.ReferenceSession()
    loaded = ref.load_problem({"device": "cpu", "shared_dir": shared, "problem": problem, "seed": 3})
    out = {"mode": loaded["device_transport"], "lean": loaded["lean_timing"]}
    cand = candidate.CandidateSession()
    cand.load_candidate({"device": "cpu", "transport": loaded["transport"], "init_inputs": loaded["init_inputs"],
                         "state": loaded["state"], "candidate": honest, "seed": 3})
    ref.make_trial({"trial": 0, "seed": 3})
    checks = []
    for t in range(5):  # lean: in turn
        cand.run({"inputs": f"inputs_main_{t}", "outputs": f"out_{t}"})
        checks.append(ref.check({"trial": t, "candidate_outputs": f"out_{t}"})["match"])
        if t + 1 < 5:
            ref.make_trial({"trial": t + 1, "seed": 3})
    out["checks"] = checks
    out["redraw"] = ref.redraw
    out["dropped"] = sorted(ref.trials.dropped)
    out["inputs_kept"] = sorted(n for n, r in ref.trials.records.items() if "inputs_before" in r)
    out["published"] = sorted(n for n in ref.exchange._published if n.startswith("inputs_"))

    ref.prepare_timing({"trial": 0, "compile_baseline": False, "sets": [0, 1]})
    cand.prepare_timing({"inputs": "inputs_main_0", "input_sets": ["inputs_main_0", "inputs_main_1"], "lean": True})
    drawn = []
    original = ref._draw_again
    ref._draw_again = lambda record: drawn.append(record["seed"]) or original(record)
    schedule = [0, 1, 1, 0]
    out["baseline"] = len(ref.time({"which": "eager", "reps": 4, "schedule": schedule})["times_ms"])
    out["drawn_for_timing"] = len(drawn)
    cand.time({"reps": 4, "schedule": schedule})
    cand.timing_outputs({"picks": [{"rep": r, "outputs": f"rep_{r}"} for r in range(4)]})
    out["timed"] = [ref.check({"trial": k, "candidate_outputs": f"rep_{r}", "timing": True})["match"]
                    for r, k in enumerate(schedule)]
    print(json.dumps(out))
""")


def test_lean_trials_on_the_host_path_release_sets_and_draw_timing_sets_again(tmp_path):
    out = session_scenario.run(tmp_path, SCENARIO, {"problem": PROBLEM, "honest": HONEST})
    assert out["mode"] == "host" and out["lean"] is True
    assert out["checks"] == [True] * 5
    # Trials 2-4 let go of their sealed sets after their checks; 0 and 1 (the timing sets) keep theirs.
    assert out["redraw"] is True and out["dropped"] == [2, 3, 4]
    assert out["inputs_kept"] == [0, 1] and out["published"] == ["inputs_main_0", "inputs_main_1"]
    # The baseline's sets are drawn again from their seeds: the first, then one per swap.
    assert out["baseline"] == 4 and out["drawn_for_timing"] == 5
    assert out["timed"] == [True] * 4
