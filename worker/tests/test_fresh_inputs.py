"""Fresh input sets for the cached-results check (docs/checks.md): the candidate session takes a set it
has never seen as one more set a timing schedule can name, and its calls on it are checked against
the reference's outputs for that set.

Both sessions run in one child process on the host transport (the candidate's audit hook cannot be
removed again)."""

import textwrap

import session_scenario

PROBLEM = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(256, 64)]
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
    import json, sys
    from kforge_worker.roles import candidate, reference

    problem, honest, shared = sys.argv[1:4]
    ref = reference.ReferenceSession()
    loaded = ref.load_problem({"device": "cpu", "shared_dir": shared, "problem": problem, "seed": 3})
    cand = candidate.CandidateSession()
    cand.load_candidate({"device": "cpu", "transport": loaded["transport"], "init_inputs": loaded["init_inputs"],
                         "state": loaded["state"], "candidate": honest, "seed": 3})
    for t in range(2):
        ref.make_trial({"trial": t, "seed": 3})
    prepared = ref.prepare_timing({"trial": 0, "compile_baseline": False, "sets": [0, 1]})
    # The untimed work measured again on request (kforge asks when a block is far below its floor).
    out_untimed = [prepared["untimed_ms_per_rep"], ref.untimed_cost({})["untimed_ms_per_rep"]]
    cand.prepare_timing({"inputs": "inputs_main_0", "input_sets": ["inputs_main_0", "inputs_main_1"]})
    out = {"sets": [], "matches": [], "times": [], "untimed": out_untimed}
    for trial, seen, other in ((1000, 0, 1), (1001, 1, 1000)):
        ref.make_trial({"trial": trial, "seed": 3})
        fresh = cand.timing_inputs_cmd({"path": f"inputs_main_{trial}"})["set"]
        out["sets"].append(fresh)
        block = cand.time({"reps": 4, "schedule": [seen, 1 - seen, seen, fresh]})
        out["times"].append(len(block["times_ms"]))
        # Reps 0 to 2 ran on the prepared sets, the last on the fresh one: each matches its own trial,
        # and the fresh call's outputs are not those of another set (a prepared one, the fresh set before).
        picks = [(0, seen), (1, 1 - seen), (2, seen), (3, trial), (3, other)]
        cand.timing_outputs({"picks": [{"rep": r, "outputs": f"{trial}_{k}"} for k, (r, _) in enumerate(picks)]})
        out["matches"].append([ref.check({"trial": t, "candidate_outputs": f"{trial}_{k}", "timing": True})["match"]
                               for k, (_, t) in enumerate(picks)])
    try:
        cand.time({"reps": 1, "schedule": [3]})
        out["beyond"] = "accepted"
    except ValueError as exc:
        out["beyond"] = str(exc)
    print(json.dumps(out))
""")


def test_a_fresh_set_is_scheduled_after_the_prepared_ones_and_replaced_by_the_next(tmp_path):
    out = session_scenario.run(tmp_path, SCENARIO, {"problem": PROBLEM, "honest": HONEST})
    assert out["sets"] == [2, 2]  # one slot after the two prepared sets, reused
    assert out["times"] == [4, 4]
    assert out["matches"] == [[True, True, True, True, False]] * 2, out["matches"]
    assert "schedule" in out["beyond"]  # only the prepared sets and the current fresh one can be named
    assert all(isinstance(ms, float) and ms > 0 for ms in out["untimed"]), out["untimed"]
