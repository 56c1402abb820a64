"""The command line as a user and a script meet it: the shared evaluation flags and their defaults,
`--json -`, run and bench ids, `-q`, typo suggestions, `kforge doctor`, environment errors (exit 4)
and the generated completions and man page. Most tests run no evaluation at all; the few that do
use the tiny problem without timing."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_support import ROOT, candidate, problem

TINY = problem("tiny_add")
CHECK_ONLY = ["--no-timing", "--trials", "2"]


def default_of(help_text: str, flag: str) -> str:
    """The default CLI11 prints for `flag` in --help ("--reps INT:... [30]")."""
    line = next(line for line in help_text.splitlines() if re.search(rf"(^|[ ,]){re.escape(flag)}\b", line))
    m = re.search(r"\[([0-9.]+)\]|=([0-9.]+)", line)
    assert m, line
    return m.group(1) or m.group(2)


def test_the_evaluation_flags_have_one_set_of_defaults(kforge):
    helps = {cmd: kforge.run(cmd, "--help").stdout for cmd in ["eval", "run", "bench", "profile"]}
    for cmd, text in helps.items():
        assert default_of(text, "--reps") == "30", (cmd, text)
        assert default_of(text, "--warmup") == "3", (cmd, text)
        assert float(default_of(text, "--timeout")) == 120, (cmd, text)
        if cmd != "profile":
            assert default_of(text, "--trials") == "5", (cmd, text)
            assert "--shapes" in text, cmd
    for cmd in ["run", "bench"]:
        assert "--eval-trials" in helps[cmd] and "--eval-timeout" in helps[cmd], cmd
    assert "--no-timing" in helps["bench"]


def assert_provenance(env: dict, command: str):
    """What every JSON output says it was produced with: kforge, the command line, Python, torch, the host."""
    assert env["kforge_version"], env
    assert Path(env["command_line"][0]).name == "kforge" and env["command_line"][1] == command, env
    assert re.fullmatch(r"3\.\d+\.\d+", env["python_version"]) and env["python"], env
    assert env["torch"], env  # a version string, or a bench's list of the versions its evaluations used
    assert env["host"]["cpu"] and env["host"]["cpus"] >= 1 and isinstance(env["host"]["gpus"], list), env


def test_json_dash_puts_only_json_on_stdout(kforge):
    proc = kforge.run("targets", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    names = [t["name"] for t in doc["targets"]]
    assert {"cpu", "cuda"} <= set(names)
    assert_provenance(doc["env"], "targets")
    assert "TARGET" in proc.stderr  # the table moved to stderr
    assert not (kforge.tmp / "-").exists()

    proc = kforge.run("eval", TINY, candidate("correct"), *CHECK_ONLY, "--json", "-")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "correct"
    assert_provenance(result["env"], "eval")
    assert "status: correct" in proc.stderr


def test_bench_and_its_report_put_only_json_on_stdout(kforge):
    suite, cands = kforge.tmp / "suite", kforge.tmp / "cands"
    suite.mkdir()
    cands.mkdir()
    shutil.copy(TINY, suite / "tiny_add.py")
    shutil.copy(candidate("correct"), cands / "tiny_add.py")
    proc = kforge.run("bench", suite, "--target", "cpu", "--candidates", cands, *CHECK_ONLY,
                      "--out", kforge.tmp / "out", "--json", "-")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc == json.loads((kforge.tmp / "out" / "report.json").read_text())
    assert doc["metrics"]["correct"] == 1
    assert_provenance(doc["bench"]["environment"], "bench")
    assert "1 of 1 problems correct" in proc.stderr  # the summary moved to stderr
    bench = f"bench-{doc['bench']['id']}"

    again = kforge.run("report", bench, "--json", "-")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == doc
    # The older bare switch still works, with a warning that says what to use instead.
    bare = kforge.run("report", bench, "--json")
    assert bare.returncode == 0, bare.stderr
    assert json.loads(bare.stdout) == doc
    assert "`--json` without a file is deprecated: use --format json" in bare.stderr


def test_profile_puts_only_json_on_stdout(kforge):
    broken = kforge.tmp / "broken.py"
    broken.write_text("import torch\nclass ModelNew(torch.nn.Module):\n"
                      "    def __init__(self):\n        super().__init__(\n")
    proc = kforge.run("profile", TINY, broken, "--reps", "4", "--json", "-", timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert "failed while loading" in doc["error"]
    assert_provenance(doc["env"], "profile")
    assert "profile failed" in proc.stderr


def test_llm_ping_puts_only_json_on_stdout(kforge):
    model = kforge.tmp / "model.py"
    model.write_text("import json, sys\njson.load(sys.stdin)\n"
                     "print(json.dumps({'text': 'pong', 'usage': {'input_tokens': 7, 'output_tokens': 1}}))\n")
    proc = kforge.run("llm", "ping", "--llm", f"exec:{sys.executable} {model}", "--json", "-")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["reply"], doc["input_tokens"], doc["output_tokens"]) == ("pong", 7, 1)
    assert doc["env"]["kforge_version"] and doc["env"]["command_line"][1:3] == ["llm", "ping"]
    assert "reply:    pong" in proc.stderr


def test_quiet_hides_logs_not_the_result(kforge):
    loud = kforge.run("eval", TINY, candidate("correct"), *CHECK_ONLY)
    assert loud.returncode == 0, loud.stdout + loud.stderr
    assert " info " in loud.stderr  # what -q is to hide
    proc = kforge.run("-q", "eval", TINY, candidate("correct"), *CHECK_ONLY)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "status: correct" in proc.stdout
    assert " info " not in proc.stderr


def test_a_relative_python_path_is_taken_from_where_kforge_runs(kforge):
    # kforge runs in kforge.tmp; the worker starts elsewhere (the sandbox's working folder).
    relative = os.path.relpath(ROOT / ".venv" / "bin" / "python", kforge.tmp)
    assert not os.path.isabs(relative)
    proc = kforge.run("eval", TINY, candidate("correct"), *CHECK_ONLY, "--python", relative)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "status: correct" in proc.stdout


def test_ids_are_accepted_in_both_spellings(kforge):
    db = kforge.tmp / "ids.db"
    for args, message in [
        (["run", "--resume", "run-4"], "no run 4"),
        (["run", "--resume", "4"], "no run 4"),
        (["bench", "--resume", "bench-4"], "no bench 4"),
        (["bench", "--resume", "4"], "no bench 4"),
        (["report", "bench-4"], "no bench 4"),
        (["report", "run-4"], "no run 4"),
        (["run", "--resume", "bench-4"], "'bench-4' is a bench; give a run"),
        (["bench", "--resume", "run-4"], "'run-4' is a run; give a bench"),
        (["report", "cake-4"], "neither a run"),
    ]:
        proc = kforge.run(*args, "--db", db)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)


def test_settings_beside_resume_are_refused_not_ignored(kforge):
    proc = kforge.run("bench", "--resume", "1", "--out", kforge.tmp / "elsewhere", "--db", kforge.tmp / "x.db")
    assert proc.returncode == 2
    assert "--out cannot be given with --resume" in proc.stderr, proc.stderr
    proc = kforge.run("run", "--resume", "run-1", "--rounds", "9", "--db", kforge.tmp / "x.db")
    assert proc.returncode == 2
    assert "--rounds cannot be given with --resume" in proc.stderr, proc.stderr


def test_a_mistyped_command_gets_a_suggestion(kforge):
    proc = kforge.run("evall", TINY)
    assert proc.returncode == 2
    assert "unknown command 'evall' (did you mean eval?)" in proc.stderr, proc.stderr
    proc = kforge.run("--config", "x.toml", "bnech")
    assert "did you mean bench?" in proc.stderr, proc.stderr
    proc = kforge.run("frobnicate")
    assert proc.returncode == 2 and "did you mean" not in proc.stderr and "unknown command" in proc.stderr
    proc = kforge.run("llm", "pnig")
    assert proc.returncode == 2 and "unknown command 'pnig' (did you mean ping?)" in proc.stderr, proc.stderr
    proc = kforge.run("eval", TINY, candidate("correct"), "--trails", "2")
    assert proc.returncode == 2 and "unknown option '--trails' of `kforge eval` (did you mean --trials?)" in proc.stderr


def venv_has_gpu() -> bool:
    python = ROOT / ".venv" / "bin" / "python"
    res = subprocess.run([str(python), "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True,
                         text=True, timeout=300)
    return res.stdout.strip() == "True"


def test_doctor_on_a_ready_machine(kforge):
    proc = kforge.run("doctor", "--json", "-", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["ready"] is True
    assert_provenance(report["env"], "doctor")
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["torch"]["level"] == "ok"
    assert checks["worker"]["level"] == "ok"  # the worker's modules and the packages they import
    targets = {t["name"]: t for t in report["targets"]}
    if shutil.which("g++"):
        assert targets["cpu"]["readiness"] == "runnable", targets["cpu"]
    if not venv_has_gpu():
        # Ready although the GPU targets cannot run here: they check candidates with --compile-only.
        assert targets["cuda"]["readiness"] == "compile-only", targets["cuda"]
        assert "no NVIDIA GPU" in targets["cuda"]["reason"]
    assert "kforge is ready" in proc.stderr


def test_doctor_with_a_broken_interpreter(kforge):
    proc = kforge.run("doctor", "--python", "/bin/false", timeout=300)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert re.search(r"FAIL\s+interpreter\s+/bin/false exited with 1", proc.stdout), proc.stdout
    tree = kforge.binary.resolve().parent.parent  # a build tree: its own setup script
    assert f"fix: run {tree / 'scripts' / 'setup.sh'}, which makes {tree / '.venv'} with torch" in proc.stdout
    assert "kforge is not ready" in proc.stdout


@pytest.fixture
def python_without_torch(tmp_path):
    """The system interpreter without site-packages (-S): whatever torch it may have is out of reach."""
    script = tmp_path / "python-without-torch"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def python_without_xxhash(tmp_path):
    """The test suite's interpreter with one of the worker's packages (xxhash) out of reach: a module of
    that name that raises as a missing one does, first on its path."""
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "xxhash.py").write_text("raise ModuleNotFoundError(\"No module named 'xxhash'\", name='xxhash')\n")
    script = tmp_path / "python-without-xxhash"
    script.write_text(f"#!/bin/sh\nPYTHONPATH={hidden}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} \"$@\"\n")
    script.chmod(0o755)
    return script


def test_a_missing_worker_package_is_an_environment_error_naming_it(kforge, python_without_xxhash):
    proc, result = kforge.eval(TINY, candidate("correct"), *CHECK_ONLY, "--python", python_without_xxhash)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert result["status"] == "environment_error", result
    assert "cannot import xxhash" in result["error"]["message"]
    assert "requirements.txt" in result["error"]["message"]
    assert "Traceback" not in proc.stdout


def test_doctor_fails_where_the_worker_does_not_import(kforge, python_without_xxhash):
    proc = kforge.run("doctor", "--python", str(python_without_xxhash), timeout=300)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert re.search(r"FAIL\s+worker\s+.*cannot import kforge's worker: ModuleNotFoundError: No module named 'xxhash'",
                     proc.stdout), proc.stdout
    assert "-m pip install -r " in proc.stdout and "kforge is not ready" in proc.stdout


def test_no_torch_is_an_environment_error(kforge, python_without_torch):
    proc, result = kforge.eval(TINY, candidate("correct"), *CHECK_ONLY, "--python", python_without_torch,
                               "--no-sandbox")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert result["status"] == "environment_error", result
    assert "cannot import torch" in result["error"]["message"]
    assert "Traceback" not in proc.stdout
    assert "kforge doctor" in proc.stderr


def test_profile_without_torch_is_an_environment_error(kforge, python_without_torch, tmp_path):
    out = tmp_path / "profile.json"
    proc = kforge.run("profile", str(TINY), str(candidate("correct")), "--python", str(python_without_torch),
                      "--no-sandbox", "--json", str(out), timeout=300)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    doc = json.loads(out.read_text())
    assert doc["status"] == "environment_error", doc
    assert "did not start" in doc["error"] and "torch" in doc["error"], doc["error"]
    assert "kforge doctor" in proc.stderr


def test_cuda_target_without_a_gpu_is_an_environment_error(kforge):
    if venv_has_gpu():
        pytest.skip("this machine has a GPU")
    proc, result = kforge.eval(TINY, candidate("correct"), *CHECK_ONLY, "--target", "cuda")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert result["status"] == "environment_error", result
    assert "sees no GPU" in result["error"]["message"]


def complete(script: str, *words: str) -> list:
    """What bash completion offers for the command line `words` (the last one being typed)."""
    line = " ".join(f"'{w}'" for w in words)
    res = subprocess.run(["bash", "-c", f'{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _kforge; '
                          'printf "%s\\n" "${COMPREPLY[@]}"'], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


def test_bash_completion_offers_commands_and_their_flags(kforge):
    script = kforge.run("completion", "bash").stdout
    assert complete(script, "kforge", "ev") == ["eval"]
    assert complete(script, "kforge", "-q", "do") == ["doctor"]
    assert "--trials" in complete(script, "kforge", "eval", "p.py", "--tr")
    assert "--eval-trials" in complete(script, "kforge", "bench", "--eval-t")
    assert complete(script, "kforge", "llm", "p") == ["ping"]
    assert "--full" in complete(script, "kforge", "report", "3", "--fu")
    # --target completes target names, not file names; completion and man are commands like the others.
    assert complete(script, "kforge", "eval", "p.py", "--target", "cp") == ["cpu"]
    assert "completion" in complete(script, "kforge", "co")
    helped = kforge.run("--help").stdout
    assert "completion" in helped and re.search(r"^\s+man\b", helped, re.M), helped


def test_zsh_completion_and_man_page_are_generated(kforge):
    zsh = kforge.run("completion", "zsh")
    assert zsh.returncode == 0 and zsh.stdout.startswith("#compdef kforge")
    assert "'--no-timing[" in zsh.stdout
    man = kforge.run("man")
    assert man.returncode == 0 and man.stdout.startswith(".TH KFORGE 1")
    if shutil.which("zsh"):
        res = subprocess.run(["zsh", "-n", "-c", zsh.stdout], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
    if shutil.which("groff"):
        res = subprocess.run(["groff", "-man", "-Tutf8", "-z"], input=man.stdout, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
    bad = kforge.run("completion", "fish")
    assert bad.returncode == 2
