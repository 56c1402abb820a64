"""Transcripts of `kforge run` answered by hand through `manual:` (examples/transcripts/), replayed by
position on the problems they were recorded on (tests/e2e/problems/, kforge's own equivalents of
three KernelBench problems). The run must complete, and the prompts must carry what a kernel
engineer needs: the sizes as run, and the history of attempts. Timings differ from machine to
machine, so nothing here depends on them."""

import json
import re

import pytest

from e2e_support import ROOT, HERE

TRANSCRIPTS = ROOT / "examples" / "transcripts"
PROBLEMS = HERE / "problems"
QUICK = ["--no-compile-baseline", "--no-profile", "--eval-reps", "15", "--eval-warmup", "1", "--eval-trials", "2"]

# transcript, problem, the --set values it was recorded with, a line the first prompt must show
CASES = [
    ("softmax_rows_cpu.jsonl", "softmax_rows.py", ["batch_size=128", "dim=8192"],
     "- forward input 0: float32 tensor [128, 8192]"),
    ("layernorm_4d_cpu.jsonl", "layernorm_4d.py", ["batch_size=4", "features=16", "dim1=64", "dim2=64"],
     "- constructor argument 0: tuple of (int 16; int 64; int 64)"),
    ("gemm_multiply_leakyrelu_cpu.jsonl", "gemm_multiply_leakyrelu.py",
     ["batch_size=128", "in_features=1024", "out_features=1024"], "- forward input 0: float32 tensor [128, 1024]"),
]


def texts(request: dict, role: str) -> list:
    return ["".join(p.get("text", "") for p in m["content"]) for m in request["messages"] if m["role"] == role]


@pytest.mark.parametrize("transcript,problem,sets,shape_line", CASES, ids=[c[0].split("_cpu")[0] for c in CASES])
def test_hand_answered_transcript_replays(kforge, transcript, problem, sets, shape_line):
    path = TRANSCRIPTS / transcript
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    rounds = 1 + sum(1 for e in entries if "performance analyst" in texts(e["request"], "system")[0])
    set_args = [a for s in sets for a in ("--set", s)]
    record = kforge.tmp / "replayed.jsonl"
    proc = kforge.run("run", PROBLEMS / problem, "--target", "cpu", "--llm", f"replay:{path}", "--replay-by-position",
                      "--record", record, "--rounds", str(rounds), "--patience", "0", "--seed", "1", *set_args,
                      "--out", kforge.tmp / "out", *QUICK, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((kforge.tmp / "out" / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["best"] is not None
    assert summary["usage"]["calls"] == len(entries)

    made = [json.loads(line)["request"] for line in record.read_text().splitlines()]
    first = texts(made[0], "user")[0]
    for s in sets:  # the overridden sizes are in the source as it runs
        name, value = s.split("=")
        assert re.search(rf"^{name} = {value}  # --set {name}={value} \(the file says \d+\)$", first, re.M), s
    assert shape_line in first
    # Later generation requests carry the history of every attempt, not the notes again.
    later = [r for r in made[1:] if "performance analyst" not in texts(r, "system")[0]]
    assert later, "no generation request after the first round"
    for r in later:
        last = texts(r, "user")[-1]
        assert "## Every attempt so far" in last and "| r0.s0.a0 |" in last
        assert "## How to write kernels for `cpu`" not in last
    analyses = [r for r in made if "performance analyst" in texts(r, "system")[0]]
    assert all("Shapes and dtypes" in texts(r, "user")[0] for r in analyses)
