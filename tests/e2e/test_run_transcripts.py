"""Transcripts of `kforge run` answered by hand through `manual:` on three KernelBench problems (cpu target,
sizes reduced with --set), replayed by position (tests/e2e/transcripts/, README.md there).

In CI they replay on kforge's own equivalents of those problems (tests/e2e/problems/: the same computations,
sizes and global names), so the run must complete and decide as the recording did: a slow correct first
kernel, a much faster one that is kept, a slower variant not kept head to head (rejected, or undecided on
a loaded machine), and a last round whose prompts show that attempt. The prompts must carry the sizes as run and the history of
attempts, not timings. With KERNELBENCH_DIR set (a KernelBench checkout's `KernelBench` folder), the same
transcripts replay on the original problems, where no request may differ from the recording."""

import json
import os
import re
from pathlib import Path

import pytest

from e2e_support import HERE

TRANSCRIPTS = HERE / "transcripts"
PROBLEMS = HERE / "problems"
# The options the transcripts were recorded with (tests/e2e/transcripts/README.md).
OPTIONS = ["--target", "cpu", "--rounds", "4", "--patience", "0", "--seed", "1", "--threads", "1", "--max-fix", "0",
           "--no-compile-baseline", "--no-profile", "--eval-reps", "15", "--eval-warmup", "1", "--eval-trials", "2"]

# transcript, own equivalent, KernelBench original, --set values, a line the first prompt must show
CASES = [
    ("softmax_cpu.jsonl", "softmax_rows.py", "level1/23_Softmax.py", ["batch_size=128", "dim=8192"],
     "- forward input 0: float32 tensor [128, 8192]"),
    ("rms_norm_cpu.jsonl", "rms_norm_4d.py", "level1/36_RMSNorm_.py",
     ["batch_size=4", "features=64", "dim1=64", "dim2=64"], "- forward input 0: float32 tensor [4, 64, 64, 64]"),
    ("gemm_multiply_leakyrelu_cpu.jsonl", "gemm_multiply_leakyrelu.py", "level2/12_Gemm_Multiply_LeakyReLU.py",
     ["batch_size=64", "in_features=512", "out_features=512"], "- forward input 0: float32 tensor [64, 512]"),
]
IDS = [c[0].split("_cpu")[0] for c in CASES]


def texts(request: dict, role: str) -> list:
    return ["".join(p.get("text", "") for p in m["content"]) for m in request["messages"] if m["role"] == role]


def is_analysis(request: dict) -> bool:
    return "performance analyst" in texts(request, "system")[0]


def replay(kforge, transcript: Path, problem: Path, sets: list):
    record = kforge.tmp / "replayed.jsonl"
    proc = kforge.run("run", problem, "--llm", f"replay:{transcript}", "--replay-by-position", "--record", record,
                      *[a for s in sets for a in ("--set", s)], *OPTIONS, "--out", kforge.tmp / "out", timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    made = [json.loads(line)["request"] for line in record.read_text().splitlines()]
    return proc, json.loads((kforge.tmp / "out" / "summary.json").read_text()), made


@pytest.mark.parametrize("transcript,problem,original,sets,shape_line", CASES, ids=IDS)
def test_hand_answered_transcript_replays(kforge, transcript, problem, original, sets, shape_line):
    path = TRANSCRIPTS / transcript
    entries = path.read_text().splitlines()
    _, summary, made = replay(kforge, path, PROBLEMS / problem, sets)
    assert summary["status"] == "finished" and summary["usage"]["calls"] == len(entries) == len(made)

    # The slow first kernel, the fast one kept over it (30x and more), the slower variant not kept. The
    # variant is 2-3x slower, under the 5x a timing-dependent test may rely on: with the other tests
    # loading the machine its interval can reach 1, and it is undecided instead of rejected.
    rows = {c["step"]: c for c in summary["candidates"]}
    assert summary["best"]["step"] == "r1.s0.a0", summary["verdict"]
    assert rows["r1.s0.a0"]["decision"] == "accepted" and rows["r1.s0.a0"]["vs_best"]["ci_low"] > 1
    variant, vs_best = rows["r2.s0.a0"]["decision"], rows["r2.s0.a0"]["vs_best"]
    assert variant in ("rejected", "undecided") and vs_best["point"] < 1, rows["r2.s0.a0"]
    assert vs_best["ci_high"] < 1 if variant == "rejected" else vs_best["ci_low"] < 1 <= vs_best["ci_high"]

    # The first request: the sizes as run, in the source and as shapes.
    first = texts(made[0], "user")[0]
    for s in sets:
        name, value = s.split("=")
        assert re.search(rf"^{name} = {value}  # --set {name}={value} \(the file says \d+\)$", first, re.M), s
    assert shape_line in first

    # Each later generation request is whole and compact: one message with the problem, the notes once,
    # the history of every attempt as ratios (no timings); not the conversation, so it does not grow.
    later = [r for r in made[1:] if not is_analysis(r)]
    assert len(later) == 3
    for r in later:
        assert [m["role"] for m in r["messages"]] == ["system", "user"]
        added = texts(r, "user")[-1]
        assert "## Every attempt so far" in added and "| r0.s0.a0 | kept (first correct)" in added
        assert added.count("## How to write kernels for `cpu`") == 1
        assert not re.search(r"\d ms\b", added), added
    sizes = [sum(len(t) for role in ("system", "user") for t in texts(r, role)) for r in later]
    assert max(sizes) < 1.5 * min(sizes), sizes
    assert all("Shapes and dtypes" in texts(r, "user")[0] for r in made if is_analysis(r))

    # The last round: its analysis and its generation request show the attempt not kept and what it changed.
    analysis, last = made[-2], texts(made[-1], "user")[-1]
    assert is_analysis(analysis) and f"## The latest attempt: r2.s0.a0 ({variant})" in texts(analysis, "user")[0]
    assert "# Round 3" in last and f"## Your latest attempt that was not kept: r2.s0.a0 ({variant})" in last
    assert "| r1.s0.a0 | kept" in last and f"| r2.s0.a0 | {variant}" in last
    assert re.search(r"^```diff\n--- r1\.s0\.a0 \(best\)\n\+\+\+ r2\.s0\.a0\n", last, re.M), last

    # The delivered best.py passes kforge's own checks: `kforge eval` of it is correct.
    proc, result = kforge.eval(PROBLEMS / problem, kforge.tmp / "out" / "best.py", "--target", "cpu", "--threads", "1",
                               "--no-compile-baseline", "--reps", "5", "--trials", "2",
                               *[a for s in sets for a in ("--set", s)])
    assert result and result["status"] == "correct", proc.stdout + proc.stderr


KERNELBENCH = os.environ.get("KERNELBENCH_DIR", "")


@pytest.mark.skipif(not KERNELBENCH, reason="KERNELBENCH_DIR (a KernelBench checkout's KernelBench folder) is not set")
@pytest.mark.parametrize("transcript,problem,original,sets,shape_line", CASES, ids=IDS)
def test_transcript_matches_the_original_problem(kforge, transcript, problem, original, sets, shape_line):
    source = Path(KERNELBENCH) / original
    if not source.exists():
        pytest.fail(f"KERNELBENCH_DIR={KERNELBENCH} has no {original}")
    proc, summary, _ = replay(kforge, TRANSCRIPTS / transcript, source, sets)
    assert "differs from transcript" not in proc.stderr, proc.stderr
    assert summary["best"]["step"] == "r1.s0.a0", summary["verdict"]
