"""`kforge model` end to end on the cpu target: a transformer block (kforge's equivalent of
KernelBench level3/44_MiniGPTBlock) profiled, cut into regions written as problems, the regions
through the refinement loop with scripted answers (exec:, tests/e2e/scripted/model_cmd), their
kernels installed into the model, the patched model verified against the original and measured end
to end."""

import json
import subprocess
import sys

import pytest
import torch

from e2e_support import HERE

SCRIPTED = HERE / "scripted"
MINI_GPT = HERE / "problems" / "mini_gpt_block.py"
QUICK_RUN = ["--rounds", "1", "--max-fix", "0", "--seed", "3", "--no-compile-baseline", "--no-profile",
             "--run-arg=--eval-reps", "--run-arg=15", "--run-arg=--eval-warmup", "--run-arg=1",
             "--run-arg=--eval-trials", "--run-arg=2"]


def scripted(log) -> str:
    return f"exec:{sys.executable} {SCRIPTED / 'model.py'} {SCRIPTED / 'model_cmd' / 'plan.json'} {log}"


def test_model_profile_regions_loop_patch_verified_and_measured(kforge):
    log = kforge.tmp / "calls.jsonl"
    proc = kforge.run("model", MINI_GPT, "--target", "cpu", "--llm", scripted(log), "--top", "4", "--threads", "1",
                      "--no-e2e-compile", "--e2e-reps", "15", "--profile-reps", "5", *QUICK_RUN, "--json",
                      kforge.tmp / "report.json", timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = kforge.tmp / "kforge-out" / "model-1"
    report = json.loads((kforge.tmp / "report.json").read_text())
    rows = {r["kind"]: r for r in report["regions"]}
    assert set(rows) == {"attention", "gemm+epilogue", "gemm", "norm"}
    assert rows["norm"]["instances"] == [["ln_1"], ["ln_2"]]
    # Every region was a problem, and each went through a kforge run of its own.
    for r in report["regions"]:
        assert (out / "regions" / f"{r['name']}.py").is_file()
        assert r["run"] and r["run"] > 0
    # The two kernels were correct and timed by their runs; the regions answered without a program
    # have no kernel and stay with PyTorch.
    for kind in ("norm", "gemm+epilogue"):
        assert rows[kind]["kernel_speedup"] is not None, rows[kind]
        assert rows[kind]["end_to_end_speedup_alone"] is not None, rows[kind]
    for kind in ("attention", "gemm"):
        assert rows[kind]["kernel_speedup"] is None and not rows[kind]["installed"]
        assert rows[kind]["why_not_installed"].startswith("no correct kernel from run"), rows[kind]
    # Installed exactly where the kernel pays off inside the model, and the patched model verified.
    for kind in ("norm", "gemm+epilogue"):
        pays = rows[kind]["end_to_end_speedup_alone"] > 1.0 and rows[kind]["kernel_speedup"] > 1.0
        assert rows[kind]["installed"] == pays, rows[kind]
    installed = [r["name"] for r in report["regions"] if r["installed"]]
    assert report["installed"] == installed
    # Every variant with kernels passed the precision audit against the model in float64 (its MLP
    # runs through a closure over its modules, which the audit's model converts with the rest).
    measured = json.loads((out / "e2e-all.json").read_text())
    assert measured["verdicts"] and all(v["audit"]["ratio"] <= 1 for v in measured["verdicts"].values()), measured
    if installed:
        assert report["verdict"]["correct"] is True
        assert set(report["variants"]) == {"eager", "kforge"}
        assert report["measured_speedup"]["low"] <= report["measured_speedup"]["median"] <= report["measured_speedup"]["high"]
    shares = sum(r["share"] for r in report["regions"]) + report["remainder_share"]
    assert abs(shares - 1.0) < 1e-9
    md = (out / "report.md").read_text()
    assert "| Region | Kind | Modules | Calls | Share | Kernel speedup | End to end alone | Installed |" in md
    assert "Predicted end-to-end speedup" in md
    assert "<svg" in (out / "report.html").read_text()
    assert "report:" in proc.stdout and "attention" in proc.stdout

    # patch.py alone (no kforge on the path but the model file's own folder) makes the model match.
    code = (f"import importlib.util, sys, torch\n"
            f"spec = importlib.util.spec_from_file_location('m', {str(MINI_GPT)!r}); m = importlib.util.module_from_spec(spec)\n"
            f"spec.loader.exec_module(m); torch.manual_seed(0)\n"
            f"model = m.Model(*m.get_init_inputs()).eval(); x = m.get_inputs()\n"
            f"with torch.no_grad(): want = model(*x)\n"
            f"sys.path.insert(0, {str(out)!r}); import patch; patch.apply(model)\n"
            f"with torch.no_grad(): got = model(*x)\n"
            f"print(len(patch.INSTALL), float((got - want).abs().max()))\n")
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd=kforge.tmp)
    assert proc.returncode == 0, proc.stderr
    count, err = proc.stdout.split()
    assert int(count) == len(installed) and float(err) < 1e-4

    # Finished: a resume does no region's run again and reports the same regions.
    before = log.read_text().count("\n")
    again = kforge.run("model", "--resume", "1", timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert log.read_text().count("\n") == before


TRANSCRIPTS = HERE / "transcripts" / "mini_gpt_block_cpu"


def test_model_replays_each_regions_recorded_transcript(kforge):
    """The regions' runs replay the transcripts `--record DIR` wrote, one file per region named by
    its modules (this machine's profile may number the regions otherwise): the same kernels come
    back, are verified inside the model and measured end to end."""
    proc = kforge.run("model", MINI_GPT, "--target", "cpu", "--llm", f"replay:{TRANSCRIPTS}", "--replay-by-position",
                      "--regions", "norm,gemm+epilogue", "--top", "2", "--threads", "1", "--no-e2e-compile",
                      "--e2e-reps", "5", "--profile-reps", "5", *QUICK_RUN, "--json", kforge.tmp / "report.json",
                      timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["kind"]: r for r in json.loads((kforge.tmp / "report.json").read_text())["regions"]}
    for kind in ("norm", "gemm+epilogue"):
        assert rows[kind]["kernel_status"] == "finished" and rows[kind]["kernel_speedup"] is not None, rows[kind]
        assert rows[kind]["end_to_end_speedup_alone"] is not None, rows[kind]


def test_a_file_without_entry_points_is_a_clear_error(kforge):
    bad = kforge.tmp / "not_a_model.py"
    bad.write_text("import torch\nx = torch.ones(2)\n")
    proc = kforge.run("model", bad, "--target", "cpu", "--llm", "manual:/nonexistent")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "defines no get_inputs()" in proc.stderr
    missing = kforge.run("model", kforge.tmp / "missing.py", "--target", "cpu", "--llm", "manual:/x")
    assert missing.returncode == 2 and "model file not found" in missing.stderr


def test_a_model_on_a_device_this_machine_lacks_is_a_clear_error(kforge):
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU: the cuda target's device is here")
    proc = kforge.run("model", MINI_GPT, "--target", "cuda", "--llm", "manual:/nonexistent")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "sees no GPU" in proc.stderr and "internal error" not in proc.stderr and "Traceback" not in proc.stderr


def crashing_on(marker, log) -> str:
    """The scripted model, except that the run of the region whose request names `marker` crashes."""
    return (f"exec:{sys.executable} {SCRIPTED / 'crash_on.py'} '{marker}' {SCRIPTED / 'model.py'} "
            f"{SCRIPTED / 'model_cmd' / 'plan.json'} {log}")


QUICK_MODEL = ["--target", "cpu", "--top", "2", "--threads", "1", "--no-e2e-compile", "--e2e-reps", "5",
               "--profile-reps", "5", *QUICK_RUN]


def model_state(kforge, n=1) -> dict:
    return json.loads((kforge.tmp / "kforge-out" / f"model-{n}" / "model.json").read_text())


def test_regions_run_in_parallel_a_crashed_one_is_an_error_and_resume_skips_done_ones(kforge):
    # The two top regions are the attention block and the GEMM with its GELU epilogue, in an order that
    # depends on the profile; the run of the first one by share (region-1) crashes.
    log = kforge.tmp / "calls.jsonl"
    proc = kforge.run("model", MINI_GPT, *QUICK_MODEL, "--jobs", "2", "--llm", crashing_on("Region 1 of ", log),
                      "--json", kforge.tmp / "report.json", timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 region runs on cpu, 2 at a time" in proc.stderr
    kernels = model_state(kforge)["kernels"]
    crashed, done = kernels["region-1"], kernels["region-2"]
    # The crashed run is an error with its reason; the other region went on to its end.
    assert crashed["status"] == "error", crashed
    assert "signal 9" in crashed["error"] and "run.log" in crashed["error"], crashed
    assert done["status"] == "finished" and done["run"] > 0, done
    # The run it had created is kept, for a resume to continue.
    assert crashed["run"] > 0 and crashed["run"] != done["run"], crashed
    assert f"kforge model: region-1: run {crashed['run']} error: kforge run killed by signal 9" in proc.stderr
    assert f"kforge model: region-2: run {done['run']} finished" in proc.stderr
    # Both runs were in progress at once.
    assert crashed["started_at"] < done["ended_at"] and done["started_at"] < crashed["ended_at"], kernels
    report = json.loads((kforge.tmp / "report.json").read_text())
    rows = {r["name"]: r for r in report["regions"]}
    assert "signal 9" in rows["region-1"]["why_not_installed"]
    assert rows["region-2"]["run"] == done["run"]

    # A resume runs only the region that is not done (its crashed run continued): the finished one asks
    # the model nothing again.
    asked = log.read_text().splitlines()
    again = kforge.run("model", "--resume", "1", timeout=900)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 region run on cpu, 2 at a time" in again.stderr
    assert "region-2 (" not in again.stderr and "region-1 (" in again.stderr
    assert f"kforge run --resume {crashed['run']} (log:" in again.stderr
    asked_again = log.read_text().splitlines()[len(asked):]
    assert not [line for line in asked_again if "Region 2 of " in line]
    kernels = model_state(kforge)["kernels"]
    assert kernels["region-1"]["status"] == "error" and kernels["region-1"]["run"] == crashed["run"]
    assert kernels["region-2"] == done


def test_a_used_up_budget_skips_the_regions_not_started_with_the_reason(kforge):
    log = kforge.tmp / "calls.jsonl"
    # 0.001 minutes: the first region starts (with `kforge run --time-limit 1`), the second finds it used up.
    proc = kforge.run("model", MINI_GPT, *QUICK_MODEL, "--jobs", "1", "--budget-minutes", "0.001", "--llm",
                      scripted(log), "--json", kforge.tmp / "report.json", timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    state = model_state(kforge)
    first, second = state["kernels"]["region-1"], state["kernels"]["region-2"]
    assert first["status"] == "finished" and first["run"] > 0, first
    summary = json.loads((kforge.tmp / "kforge-out" / "model-1" / "runs" / "region-1" / "summary.json").read_text())
    assert summary["options"]["time_limit_s"] == 1, summary["options"]
    assert second["status"] == "skipped" and "budget" in second["reason"], second
    assert state["budget"]["minutes"] == 0.001 and state["budget"]["skipped"] == ["region-2"], state["budget"]
    assert state["budget"]["used_seconds"] > 0.06
    assert "kforge model: region-2: skipped, the loop's budget of 0.001 minute(s) is used up" in proc.stderr
    assert "1 region(s) skipped for the budget (region-2)" in proc.stderr
    rows = {r["name"]: r for r in json.loads((kforge.tmp / "report.json").read_text())["regions"]}
    assert "budget" in rows["region-2"]["why_not_installed"] and rows["region-2"]["run"] is None

    # A resume with a larger budget runs the skipped region, and only it.
    again = kforge.run("model", "--resume", "1", "--budget-minutes", "30", timeout=900)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "region-1 (" not in again.stderr and "region-2 (" in again.stderr
    state = model_state(kforge)
    assert state["kernels"]["region-2"]["status"] == "finished", state["kernels"]
    assert state["options"]["budget_minutes"] == 30 and state["budget"]["skipped"] == []


def test_ray_refusals_and_a_negative_budget_are_input_errors(kforge):
    base = ["model", MINI_GPT, "--target", "cpu", "--llm", "manual:/x"]
    no_sandbox = kforge.run(*base, "--executor", "ray", "--run-arg=--no-sandbox")
    assert no_sandbox.returncode == 2 and "sandbox" in no_sandbox.stderr, no_sandbox.stderr
    device = kforge.run(*base, "--executor", "ray", "--device", "cpu")
    assert device.returncode == 2 and "--device" in device.stderr, device.stderr
    budget = kforge.run(*base, "--budget-minutes", "-1")
    assert budget.returncode == 2 and "--budget-minutes" in budget.stderr, budget.stderr
    assert not (kforge.tmp / "kforge-out").exists()


def test_regions_waiting_for_the_models_reply_stop_the_model_to_be_resumed(kforge):
    # `manual:` with nobody answering: each region's run stops waiting for its first reply, in a
    # folder of its own (two runs in one folder would both write request-0001). A waiting run does
    # not keep the next region's from starting, so one round of answers serves both. The model
    # stops (no end-to-end measurement without them) and says how to resume; the resumed model
    # resumes those same runs, here with the scripted model answering, and finishes.
    config = kforge.tmp / "kforge.toml"
    config.write_text("[llm.manual]\ntimeout_s = 1\n")
    requests = kforge.tmp / "requests"
    proc = kforge.run("--config", config, "model", MINI_GPT, "--target", "cpu", "--llm", f"manual:{requests}",
                      "--top", "2", "--threads", "1", "--no-e2e-compile", "--e2e-reps", "5", "--profile-reps", "3",
                      *QUICK_RUN, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.count("is waiting for the model's reply") == 2 and "kforge model --resume" in proc.stderr
    out = kforge.tmp / "kforge-out" / "model-1"
    state = json.loads((out / "model.json").read_text())
    assert len(state["kernels"]) == 2, state["kernels"]
    for kernel in state["kernels"].values():
        assert kernel["stop_reason"] == "llm_error" and kernel["run"] > 0, kernel
    regions = {r["name"]: r for r in json.loads((out / "analysis.json").read_text())["regions"]}
    folders = sorted("+".join(regions[name]["instances"][0]) for name in state["kernels"])
    asked = sorted(p.parent.name for p in requests.glob("*/request-0001.md"))
    assert asked == folders and not list(requests.glob("request-*")), list(requests.rglob("*"))
    assert not (out / "report.json").exists()  # not finished without the regions
    # The regions' runs used the model's interpreter (the store keeps its options).
    assert state["options"]["python"].startswith("/")
    log = kforge.tmp / "calls.jsonl"
    again = kforge.run("--config", config, "model", "--resume", "1", "--llm", scripted(log), timeout=900)
    assert again.returncode == 0, again.stdout + again.stderr
    finished = json.loads((out / "model.json").read_text())
    for name, kernel in state["kernels"].items():
        assert f"kforge run --resume {kernel['run']}" in again.stderr
        assert finished["kernels"][name]["status"] == "finished" and finished["kernels"][name]["run"] == kernel["run"]
    assert (out / "report.json").is_file()


def test_regions_chosen_by_kind_and_a_misspelt_one_is_an_error_that_keeps_the_analysis(kforge):
    # The norm is the smallest region by share, so `--top 1` reaches it only through `--regions`.
    log = kforge.tmp / "calls.jsonl"
    args = ["--target", "cpu", "--top", "1", "--threads", "1", "--no-e2e-compile", "--e2e-reps", "5",
            "--profile-reps", "3", *QUICK_RUN, "--llm", scripted(log)]
    typo = kforge.run("model", MINI_GPT, *args, "--regions", "nrom", timeout=600)
    assert typo.returncode == 2, typo.stdout + typo.stderr
    assert "--regions: no region is named or of kind nrom" in typo.stderr and "(norm)" in typo.stderr, typo.stderr
    out = kforge.tmp / "kforge-out" / "model-1"
    assert (out / "analysis.json").is_file() and not log.exists()  # profiled once, no model asked

    again = kforge.run("model", "--resume", "1", "--regions", "norm", timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "profiling" not in again.stderr  # the analysis was kept
    state = json.loads((out / "model.json").read_text())
    assert state["options"]["regions"] == ["norm"]
    (name, kernel), = state["kernels"].items()
    kinds = {r["name"]: r["kind"] for r in json.loads((out / "analysis.json").read_text())["regions"]}
    assert kinds[name] == "norm" and kernel["status"] == "finished", (kinds, state["kernels"])
    # Only the norm's run asked the model anything.
    rules = [json.loads(line)["rule"] for line in log.read_text().splitlines()]
    assert "layernorm.md" in rules and not {"linear_gelu.md", "leave_attention.md", "leave_gemm.md"} & set(rules), rules
