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
        from kforge_worker.checks import runtime_checks
        from kforge_worker.checks.runtime_checks import Watch
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
    # The thread started in forward is a concurrency event of its own (no audit event says so).
    assert out.strip() == "['concurrency', 'file_io'] True True 0.0", out


def test_patching_the_clock_is_seen(tmp_path):
    out = run("""
        import time
        from kforge_worker.checks.runtime_checks import Watch
        w = Watch("x.py")
        setattr(__import__("ti" + "me"), "perf_counter", lambda: 0.0)
        print(w.tampered())
    """)
    assert "time.perf_counter" in out


def test_operator_recorder_needs_no_dynamo_until_compiled_code_can_run():
    out = run("""
        import sys, torch
        from kforge_worker.checks.runtime_checks import _op_recorder
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


def test_operator_recorder_leaves_out_what_a_compiler_traces_on_fake_tensors():
    """Helion traces a kernel's body on fake tensors at its first call: those operators compute
    nothing and are not delegation. The same operators on real tensors, or on a Tensor subclass
    (which could carry real data), are recorded."""
    out = run("""
        import torch
        from torch._subclasses.fake_tensor import FakeTensorMode
        from kforge_worker.checks.runtime_checks import _op_recorder
        class Wrapped(torch.Tensor):
            pass
        traced, real = set(), set()
        with _op_recorder(traced):
            with FakeTensorMode() as mode:
                torch.relu(mode.from_tensor(torch.ones(4)))
            torch.tanh(torch.empty(4, device="meta"))
        with _op_recorder(real):
            torch.relu(torch.ones(4))
            torch.tanh(torch.ones(4).as_subclass(Wrapped))
        print("relu" in traced, "tanh" in traced, "relu" in real, "tanh" in real)
    """)
    assert out.split() == ["False", "False", "True", "True"]


def test_no_progress_monitor_thread_outlives_a_toolchains_progress_bar():
    """A progress bar shown while a kernel builds at the first forward call would leave tqdm's monitor
    thread running, which the concurrency check rightly blames on the candidate; the worker's setup
    keeps that monitor off."""
    out = run("""
        import threading, tqdm
        from kforge_worker.common import session
        session.setup("cpu", 0)
        for _ in tqdm.tqdm(range(3), disable=False):
            pass
        print(sorted(t.name for t in threading.enumerate()))
    """)
    assert out.strip() == "['MainThread']"


def test_files_the_targets_kernel_toolchain_writes_are_its_build(tmp_path):
    """A write made inside one of the target's [checks] kernel_modules (its DSL compiling a kernel) is
    the build's; the same write from the candidate's own code, or with another target's modules, counts."""
    (tmp_path / "fakedsl").mkdir()
    (tmp_path / "fakedsl" / "__init__.py").write_text(textwrap.dedent(f"""
        def compile_kernel():
            with open({str(tmp_path / "dsl-cache.bin")!r}, "w") as f:
                f.write("cubin")
    """))
    cand = tmp_path / "cand.py"
    cand.write_text(textwrap.dedent(f"""
        import fakedsl
        def forward(x):
            fakedsl.compile_kernel()
            return x + 1
        def forward_writing_itself(x):
            open({str(tmp_path / "own.bin")!r}, "w").close()
            return x + 1
    """))

    # One interpreter for all four cases (torch imports slowly): each Watch's hook is its own, and is
    # active only during its own forward call.
    out = run(f"""
        import sys, torch
        sys.path.insert(0, {str(tmp_path)!r})
        from kforge_worker.checks.runtime_checks import Watch
        watches = [Watch({str(cand)!r}, modules) for modules in (["fakedsl"], [], ["otherdsl"], ["fakedsl"])]
        import cand
        for w, function in zip(watches, [cand.forward] * 3 + [cand.forward_writing_itself]):
            _, facts, _ = w.forward(function, [torch.randn(4)], record_ops=False)
            print(sorted({{e[0] for e in facts["events"]}}))
    """)
    assert out.split("\n")[:4] == ["[]", "['file_io']", "['file_io']", "['file_io']"], out


def test_build_frames_cover_the_kernel_libraries_and_only_installed_modules():
    out = run("""
        import os, kforge_kernels
        from kforge_worker.checks.runtime_checks import build_frames
        frames = build_frames(["torch.utils", "no_such_module_here"])
        print(os.path.join(os.path.dirname(kforge_kernels.__file__), "") in frames,
              any(f.endswith("/torch/utils/") for f in frames), len(frames) == len(build_frames()) + 1)
    """)
    assert out.strip() == "True True True", out


def test_a_thread_started_at_import_and_switched_off_dispatch_modes_are_seen(tmp_path):
    cand = tmp_path / "cand.py"
    cand.write_text(textwrap.dedent("""
        import queue, threading
        import torch
        from torch.utils import _python_dispatch as pd
        jobs, done = queue.Queue(), queue.Queue()
        def serve():
            while True:
                done.put(torch.softmax(jobs.get(), 1))
        threading.Thread(target=serve, name="helper", daemon=True).start()
        def on_thread(x):
            jobs.put(x)
            return done.get()
        def modes_off(x):
            with getattr(pd, "_disable_current_modes")():
                return torch.softmax(x, 1)
    """))
    out = run(f"""
        import sys, torch
        from kforge_worker.checks.runtime_checks import Watch
        w = Watch({str(cand)!r})
        sys.path.insert(0, {str(tmp_path)!r})
        w.begin_import()
        import cand
        w.end_import()
        _, facts, _ = w.forward(cand.on_thread, [torch.randn(2, 4)], record_ops=True, settle=False)
        print(facts["running_threads"], "_softmax" in " ".join(facts["aten_ops"]))
        _, facts, _ = w.forward(cand.modes_off, [torch.randn(2, 4)], record_ops=True, settle=False)
        print(sorted({{e[0] for e in facts["events"]}}), facts["ops_recorded"], "_softmax" in " ".join(facts["aten_ops"]))
    """)
    lines = out.strip().splitlines()
    assert lines == ["['helper'] False", "['introspection'] True False"], out


def test_dispatch_keys_switched_off_and_threads_joined_in_forward_are_seen(tmp_path):
    """Work the operator recorder cannot see: the Python dispatch key excluded (a guard, a setter,
    torch's own alias of a switch bound at its import), or a thread started and joined within forward."""
    cand = tmp_path / "cand.py"
    cand.write_text(textwrap.dedent("""
        import threading
        import torch
        from torch.utils._mode_utils import no_dispatch
        PY = torch._C.DispatchKey.Python
        def guard(x):
            with torch._C.ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(PY)):
                return torch.softmax(x, 1)
        def setter(x):
            torch._C._dispatch_tls_set_dispatch_key_excluded(PY, True)
            try:
                return torch.softmax(x, 1)
            finally:
                torch._C._dispatch_tls_set_dispatch_key_excluded(PY, False)
        def alias(x):
            with no_dispatch():
                return torch.softmax(x, 1)
        def joined(x):
            out = []
            t = threading.Thread(target=lambda: out.append(torch.softmax(x, 1)))
            t.start()
            t.join()
            return out[0]
        def honest(x):
            return torch.empty_like(x).zero_()
    """))
    out = run(f"""
        import sys, torch
        from kforge_worker.checks.runtime_checks import Watch
        w = Watch({str(cand)!r})
        sys.path.insert(0, {str(tmp_path)!r})
        import cand
        for fn in (cand.guard, cand.setter, cand.alias, cand.joined, cand.honest):
            _, facts, _ = w.forward(fn, [torch.randn(2, 4)], record_ops=True, settle=False)
            print(fn.__name__, sorted({{e[0] for e in facts["events"]}}), "_softmax" in facts["aten_ops"])
        print(w.tampered())
    """)
    assert out.strip().splitlines() == ["guard ['introspection'] False", "setter ['introspection'] False",
                                        "alias ['introspection'] False", "joined ['concurrency'] False",
                                        "honest [] False", "[]"], out
