"""The audit hook and facts gathered in the candidate process (runs in a child interpreter: an
audit hook cannot be removed once installed)."""

import subprocess
import sys
import textwrap
from pathlib import Path

WORKER = Path(__file__).resolve().parents[1]


def run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=WORKER, timeout=120).stdout


def test_facts_from_a_hostile_forward(tmp_path):
    cand = tmp_path / "cand.py"
    cand.write_text(textwrap.dedent("""
        import threading, time
        import torch
        returned = threading.Event()
        def forward(x):
            opener = getattr(__import__("buil" + "tins"), "op" + "en")
            opener("/etc/hostname").close()
            out = torch.zeros_like(x)
            def late():
                if returned.wait(timeout=60):
                    out.fill_(1)
            threading.Thread(target=late, daemon=True).start()
            return out
    """))
    # The late write starts once the outputs' snapshot is taken (not after a fixed sleep, which a
    # loaded machine can stretch past the snapshot or past the check's wait).
    out = run(f"""
        import sys, torch
        from kforge_worker import runtime_checks
        from kforge_worker.runtime_checks import Watch
        w = Watch({str(cand)!r})
        sys.path.insert(0, {str(tmp_path)!r})
        import cand
        snapshots = runtime_checks.take_snapshots
        def snapshot_then_release(*args, **kwargs):
            taken = snapshots(*args, **kwargs)
            cand.returned.set()
            return taken
        runtime_checks.take_snapshots = snapshot_then_release
        _, facts, snap = w.forward(cand.forward, [torch.randn(4)], record_ops=True)
        print(sorted({{e[0] for e in facts["events"]}}), facts["deferred"], facts["ops_recorded"], float(snap.sum()))
    """)
    assert out.strip() == "['file_io'] True True 0.0", out


def test_patching_the_clock_is_seen(tmp_path):
    out = run("""
        import time
        from kforge_worker.runtime_checks import Watch
        w = Watch("x.py")
        setattr(__import__("ti" + "me"), "perf_counter", lambda: 0.0)
        print(w.tampered())
    """)
    assert "time.perf_counter" in out


def test_operator_recorder_needs_no_dynamo_until_compiled_code_can_run():
    out = run("""
        import sys, torch
        from kforge_worker.runtime_checks import _op_recorder
        ops = set()
        with _op_recorder(ops):
            torch.relu(torch.randn(4)).sum()
        print(sorted(ops), "torch._dynamo" in sys.modules)
        import torch._dynamo
        recorder = _op_recorder(ops)
        compiled = torch.compile(lambda x: x.sin() + 1, backend="eager")
        with recorder:
            compiled(torch.randn(4))
        print(type(recorder).__name__, "sin" in ops)
    """)
    assert out.splitlines() == ["['randn', 'relu', 'sum'] False", "_CompileSafeOpRecorder True"]
