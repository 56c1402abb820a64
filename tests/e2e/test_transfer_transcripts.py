"""Cross-platform transfer, replayed: `kforge run --transfer-from` transcripts answered by hand through
`manual:` (examples/transcripts/*_to_*.jsonl). A correct `cpu` softmax ported to `wgpu` (run for real
on lavapipe) and a `cuda` LayerNorm ported to `triton` (checked in Triton's interpreter on the CPU,
the target's compile-only mode). Each replay must complete with a correct best candidate written for
the new platform, and the model's first prompt must carry the source kernel and the platform it
came from (known to the store because the source was evaluated there first, as when recorded)."""

import json

import pytest

from e2e_support import ROOT

TRANSCRIPTS = ROOT / "examples" / "transcripts"
PROBLEMS = ROOT / "examples" / "problems"
CANDIDATES = ROOT / "examples" / "candidates"
QUICK = ["--rounds", "1", "--patience", "0", "--seed", "1", "--no-profile", "--no-compile-baseline",
         "--eval-reps", "5", "--eval-warmup", "1", "--eval-trials", "2"]

# transcript, problem, --set values, (source target, flags evaluating the source there),
# (new target, its run flags), a line of the source kernel, what marks a kernel for the new target
CASES = [
    ("softmax_cpu_to_wgpu.jsonl", "03_softmax.py", ["batch_size=128"], ("cpu", ["--no-timing"]), ("wgpu", []),
     "float e = expf(xr[c] - m); yr[c] = e; s += e;", "from kforge_kernels import wgsl"),
    ("layernorm_cuda_to_triton.jsonl", "07_layernorm.py", ["batch_size=256"], ("cuda", ["--compile-only"]),
     ("triton", ["--compile-only"]), "const float rstd = rsqrtf(block_sum(q, sh) / D + eps);", "@triton.jit"),
]


def targets_rows(kforge) -> dict:
    out = kforge.tmp / "targets.json"
    proc = kforge.run("targets", "--json", out)
    assert proc.returncode == 0, proc.stderr
    return {t["name"]: t for t in json.loads(out.read_text())["targets"]}


def texts(request: dict, role: str) -> list:
    return ["".join(p.get("text", "") for p in m["content"]) for m in request["messages"] if m["role"] == role]


@pytest.mark.parametrize("transcript,problem,sets,source,new,source_line,new_marker", CASES,
                         ids=[c[0].removesuffix(".jsonl") for c in CASES])
def test_transfer_transcript_replays(kforge, transcript, problem, sets, source, new, source_line, new_marker):
    (from_target, from_flags), (to_target, to_flags) = source, new
    rows = targets_rows(kforge)
    for name, flags in ((from_target, from_flags), (to_target, to_flags)):
        wanted = ("runnable", "compile-only") if "--compile-only" in flags else ("runnable",)
        if rows[name]["readiness"] not in wanted:
            pytest.skip(f"{name} target is {rows[name]['readiness']} here ({rows[name]['reason']})")
    set_args = [a for s in sets for a in ("--set", s)]
    source_file = CANDIDATES / from_target / problem
    assert source_line in source_file.read_text()

    # The source kernel works on its own platform, and the store remembers which one that was.
    proc, result = kforge.eval(PROBLEMS / problem, source_file, "--target", from_target, *from_flags, *set_args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["status"] in ("correct", "compiled") and result["target"] == from_target

    path = TRANSCRIPTS / transcript
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    record = kforge.tmp / "replayed.jsonl"
    proc = kforge.run("run", PROBLEMS / problem, "--target", to_target, "--transfer-from", source_file,
                      "--llm", f"replay:{path}", "--replay-by-position", "--record", record, *set_args, *to_flags,
                      "--out", kforge.tmp / "out", *QUICK, timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((kforge.tmp / "out" / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["target"] == to_target
    assert summary["best"] is not None, "no correct candidate"
    if "--compile-only" in to_flags:  # the interpreter times nothing: the verdict must not judge speed
        assert "No speed was measured" in summary["verdict"], summary["verdict"]
        assert "Keep using PyTorch" not in summary["verdict"], summary["verdict"]
    assert summary["usage"]["calls"] == len(entries)
    best = (kforge.tmp / "out" / "best.py").read_text()
    assert new_marker in best and source_line not in best
    # The delivered best.py passes kforge's own checks on its target.
    proc, result = kforge.eval(PROBLEMS / problem, kforge.tmp / "out" / "best.py", "--target", to_target, *to_flags,
                               *set_args)
    assert result and result["status"] in ("correct", "compiled"), proc.stdout + proc.stderr

    first = texts(json.loads(record.read_text().splitlines()[0])["request"], "user")[0]
    assert "## A working kernel for this problem from another platform" in first
    assert f"This program is correct on the `{from_target}` platform (`{problem}`)" in first
    assert f"to `{to_target}`" in first
    assert source_line in first  # the source kernel itself, not only its name
