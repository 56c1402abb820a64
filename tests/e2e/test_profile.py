"""`kforge profile` end to end on the cpu target: the CPU adapter, the agent text, the roofline SVG,
and usage errors. (The GPU path, with Nsight Compute, runs in bench/profile_gpu.sh.)"""

import json
import re
import xml.etree.ElementTree as ET

from e2e_support import ROOT

PROBLEMS = ROOT / "examples" / "problems"
CPU = ROOT / "examples" / "candidates" / "cpu"
SVG = "{http://www.w3.org/2000/svg}"


def test_cpu_profile_of_a_bundled_candidate(kforge):
    out, chart = kforge.tmp / "profile.json", kforge.tmp / "charts" / "relu.svg"
    proc = kforge.run("profile", PROBLEMS / "01_relu.py", CPU / "01_relu.py", "--target", "cpu", "--reps", "8",
                      "--profiler-reps", "3", "--threads", "2", "--json", out, "--chart", chart, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["correct"] is True and "error" not in doc
    assert doc["sol"]["bound"] == "memory" and doc["sol"]["bytes"] == 2 * 64 * 65536 * 4
    for side in ("candidate", "reference"):
        s = doc["sides"][side]
        assert s["timing"]["median_ms"] > 0
        tp = s["torch_profiler"]
        assert tp["threads"] == 2 and tp["kernels_per_call"] == 0 and tp["wall_us_per_call"] > 0
        # Achieved bandwidth: the problem's bytes over kforge's median, against the measured copy rate.
        ach = s["achieved"]
        assert abs(ach["bytes_per_s"] - doc["sol"]["bytes"] / (ach["median_ms"] / 1e3)) < 1e-6 * ach["bytes_per_s"]
        assert ach["pct_of_bandwidth"] > 0
        assert s["analysis"]["bound"] == "memory" and s["analysis"]["basis"] == "model"
        assert s["analysis"]["limiters"]
    # The candidate's own C++ runs outside any torch operator; the reference is aten::relu.
    ref_ops = [op["name"] for op in doc["sides"]["reference"]["torch_profiler"]["host_ops"]]
    assert "aten::relu" in ref_ops
    cand = doc["sides"]["candidate"]["torch_profiler"]
    assert cand["outside_torch_ops_us_per_call"] > cand["host_ops_us_per_call"]
    assert any("hardware counters: not read" in n for n in doc["notes"])
    assert "ncu" not in doc  # no GPU, no Nsight Compute pass
    # The terminal gets the agent's text and the chart's path.
    assert "Candidate: " in proc.stdout and "memory-bound" in proc.stdout and "limiter 1:" in proc.stdout
    assert f"Chart: {chart}" in proc.stdout
    assert doc["summary"] in proc.stdout
    root = ET.parse(chart).getroot()  # well-formed XML
    assert root.tag == f"{SVG}svg"
    assert root.find(f".//{SVG}polyline[@id='roof']") is not None
    points = root.findall(f".//{SVG}circle[@class='point']")
    assert sorted(p.get("data-side") for p in points) == ["candidate", "reference (eager)"]


def test_missing_files_and_unknown_target_are_usage_errors(kforge):
    proc = kforge.run("profile", PROBLEMS / "nope.py", CPU / "01_relu.py")
    assert proc.returncode == 2 and "problem file not found" in proc.stderr
    proc = kforge.run("profile", PROBLEMS / "01_relu.py", CPU / "01_relu.py", "--target", "fpga")
    assert proc.returncode == 2 and "fpga" in proc.stderr


def test_a_candidate_that_fails_to_build_is_reported(kforge):
    broken = kforge.tmp / "broken.py"
    broken.write_text("import torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__(\n")
    proc = kforge.run("profile", PROBLEMS / "01_relu.py", broken, "--target", "cpu", "--reps", "4", timeout=120)
    assert proc.returncode == 1
    assert "profile failed: the candidate worker failed while loading (compiling) the candidate" in proc.stderr


def test_loop_analysis_prompt_carries_the_profile(kforge):
    transcript = ROOT / "examples" / "transcripts" / "swish_cpu.jsonl"
    record = kforge.tmp / "calls.jsonl"
    proc = kforge.run("run", PROBLEMS / "12_swish.py", "--target", "cpu", "--llm", f"replay:{transcript}",
                      "--replay-by-position", "--rounds", "2", "--out", kforge.tmp / "out", "--record", record,
                      "--no-compile-baseline", "--eval-reps", "5", "--eval-warmup", "1", "--eval-trials", "2",
                      "--seed", "7", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    prompts = ["".join(p.get("text", "") for m in c["request"]["messages"] if m["role"] == "user" for p in m["content"])
               for c in calls]
    analysis = next(p for p in prompts if p.startswith("# Performance analysis"))
    assert "## Profile of the best\n\n```text\nProfile of `12_swish` on cpu" in analysis
    assert "limiter 1: " in analysis and "No profile is available" not in analysis
    # One time per call: the profile states the medians of the table beside it, the verdict's; a time
    # only torch.profiler measures says so.
    candidate = re.search(r"\n\| candidate \| (\S+) ms \|", analysis).group(1)
    eager = re.search(r"\n\| PyTorch eager \| (\S+) ms \|", analysis).group(1)
    assert f"Candidate: {candidate} ms per call (the evaluation's median, which the verdict uses)" in analysis
    assert f"Reference (PyTorch eager): {eager} ms per call (the evaluation's median" in analysis
    profile = analysis.split("## Profile of the best", 1)[1].split("```", 2)[1]
    for line in profile.splitlines():
        if re.search(r"\d (ms|µs)\b", line) and not line.startswith("Speed of light"):
            assert "the evaluation's median" in line or "under torch.profiler" in line, line
    charts = list((kforge.tmp / "state" / "runs").glob("*/profiles/*.svg"))
    assert len(charts) == 1
    ET.parse(charts[0])
