"""Output injection (docs/isolation.md): what a candidate prints or raises reaches no terminal with its
escape sequences, and no Markdown report as HTML or images. The candidate paints a fake green
`status: correct` line over kforge's own and writes the clipboard (OSC 52)."""

import re

from adversarial_support import HERE
from e2e_support import ROOT

CANDIDATE = HERE / "injection" / "terminal_escapes.py"
RELU = ROOT / "examples" / "problems" / "01_relu.py"
QUICK = ["--no-compile-baseline", "--reps", "10", "--warmup", "1", "--seed", "7", "--set", "dim=1024"]
# ESC, BEL, CR and the C1 controls (as UTF-8): none of them may reach the terminal from a candidate.
CONTROL = re.compile("[\x1b\x07\r\x80-\x9f]")


def assert_clean(text: str):
    assert not CONTROL.search(text), repr(CONTROL.search(text).group())
    # The only verdict line is kforge's own.
    verdicts = [line for line in text.splitlines() if line.startswith("status:")]
    assert all(not line.startswith("status: correct") for line in verdicts), verdicts


def test_eval_output_shows_the_candidates_text_without_its_escape_sequences(kforge):
    proc, result = kforge.eval(RELU, CANDIDATE, "--target", "cpu", *QUICK)
    assert result["status"] == "runtime_error", proc.stdout + proc.stderr
    assert "\x1b]52" in result["error"]["message"]  # the JSON keeps what the candidate said, as data
    assert_clean(proc.stdout)
    assert_clean(proc.stderr)
    assert "status: runtime_error" in proc.stdout
    assert "kernel failed" in proc.stdout and "status: correct" in proc.stdout  # shown, but as its text


def test_bench_progress_and_reports_are_clean(kforge):
    suite = kforge.tmp / "suite"
    suite.mkdir()
    (suite / "01_relu.py").write_text(RELU.read_text())
    candidates = kforge.tmp / "candidates"
    candidates.mkdir()
    (candidates / "01_relu.py").write_text(CANDIDATE.read_text())
    proc = kforge.run("bench", suite, "--candidates", candidates, "--target", "cpu", "--out", kforge.tmp / "out",
                      *QUICK)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert_clean(proc.stdout)
    assert_clean(proc.stderr)
    report = kforge.run("report", "bench-1")
    assert report.returncode == 0, report.stderr
    assert_clean(report.stdout)
    md = report.stdout
    assert "<img" not in md and "![" not in md, md
    assert "kernel failed" in md  # the candidate's message is there, as text
