"""The worker's warm-up imports the target's [worker] preload modules, and only those; loading commands
freeze what they leave for the cyclic collector."""

import sys

import torch

from kforge_worker.common import protocol, session


def test_warm_imports_the_preload_modules_and_skips_missing_ones(monkeypatch):
    monkeypatch.delitem(sys.modules, "xml.dom.minidom", raising=False)
    reply = session.warm({"device": "cpu", "threads": 0,
                          "preload": ["xml.dom.minidom", "kforge_no_such_module_anywhere"]})
    assert "xml.dom.minidom" in sys.modules
    assert reply["seconds"] >= 0


def test_warm_without_preload_imports_nothing_extra(monkeypatch):
    monkeypatch.delitem(sys.modules, "xml.dom.minidom", raising=False)
    session.warm({"device": "cpu", "threads": 0})
    assert "xml.dom.minidom" not in sys.modules


def test_loading_commands_freeze_what_they_leave_for_the_cyclic_collector():
    # After every command the worker collects reference cycles (they may hold trial-sized device
    # tensors); freezing what imports and loading left keeps that collection cheap.
    import gc

    gc.unfreeze()
    try:
        # Counts with a margin: on the GPU machines (Python 3.12.3, CUDA started) 375 objects were
        # found frozen right after gc.unfreeze() and a collection, from outside kforge. What matters
        # is that loading freezes its thousands and other commands freeze none of their own.
        before = gc.get_freeze_count()
        session.after_command("run", 0.0)
        assert gc.get_freeze_count() < before + 1000
        session.after_command("load_candidate", 0.0)
        assert gc.get_freeze_count() > before + 1000  # torch's own objects at least
    finally:
        gc.unfreeze()


def test_timing_preparation_freezes_and_a_reference_reset_unfreezes():
    # prepare_timing compiles the torch.compile baseline (many objects, alive for the evaluation); a
    # reference process kept for the next evaluation lets the collector see them again at its reset.
    import gc

    from kforge_worker.roles import reference

    gc.unfreeze()
    try:
        before = gc.get_freeze_count()  # as above
        session.after_command("prepare_timing", 0.0)
        assert gc.get_freeze_count() > before + 1000
        reference.ReferenceSession().reset({})
        assert gc.get_freeze_count() < before + 1000
    finally:
        gc.unfreeze()


def test_on_the_cpu_a_command_leaves_no_tensor_in_a_reference_cycle(monkeypatch):
    """A large tensor caught in a reference cycle waits for the cyclic collector, which counts objects,
    not bytes: on the CPU target at 1 GB the workers grew by such tensors trial after trial until one
    was killed for host memory. Past 1 GiB resident, every command collects them before it replies."""
    import gc
    import weakref

    class Holder:
        pass

    def leave_a_cycle():
        h = Holder()
        h.self, h.tensor = h, torch.empty(1 << 20)
        return weakref.ref(h.tensor)

    # A CPU worker's process: on a GPU machine an earlier test may have started CUDA in this one.
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    gc.disable()  # only the collection after the command may free it
    try:
        monkeypatch.setattr(session, "_resident_bytes", lambda: 0)  # a small process: nothing collected
        left = leave_a_cycle()
        session.after_command("check", 0.0)
        assert left() is not None
        monkeypatch.setattr(session, "_resident_bytes", lambda: 2 << 30)
        session.after_command("check", 0.0)
        assert left() is None
    finally:
        gc.enable()
        gc.collect()


def test_between_trials_cached_device_memory_is_kept_only_while_half_the_device_is_free(monkeypatch):
    """Handing back and taking again trial-sized blocks cost each trial command 12-14 ms on an H200.
    Between a correctness trial's make_trial, run and check a worker keeps them while half the device
    is free; any other command (timing's trials and checks among them), or a fuller device, hands
    them back as before."""
    gib = 1 << 30
    state = {"free": 100 * gib, "emptied": 0}
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda: 20 * gib)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: 2 * gib)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (state["free"], 140 * gib))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: state.update(emptied=state["emptied"] + 1))
    monkeypatch.delenv(protocol.COMMAND_LOG, raising=False)
    for cmd in session.TRIAL_COMMANDS:
        session.after_command(cmd, 0.0)
    assert state["emptied"] == 0
    for cmd, request in [("make_trial", {"trial": 4}), ("check", {"trial": 4})]:
        session.after_command(cmd, 0.0, request)
    assert state["emptied"] == 0
    session.after_command("time", 0.0)
    session.after_command("timing_outputs", 0.0)
    assert state["emptied"] == 2
    # Timing's: a fresh-input trial and the check of a timed call's outputs.
    session.after_command("make_trial", 0.0, {"trial": session.FIRST_TIMING_TRIAL})
    session.after_command("check", 0.0, {"trial": 0, "timing": True})
    assert state["emptied"] == 4
    state["free"] = 60 * gib  # under half of 140 GiB
    session.after_command("run", 0.0)
    assert state["emptied"] == 5


def test_warm_runs_the_roles_first_gpu_calls_only_on_a_gpu():
    called = []
    session.warm({"device": "cpu", "threads": 0}, checks=(called.append,))
    assert called == []  # a CPU worker has no kernels of its own to ready


def test_a_warm_up_check_that_fails_leaves_the_failure_to_the_trial_that_needs_it(monkeypatch):
    monkeypatch.setattr(session, "setup", lambda device, threads: None)  # a GPU worker on a machine without one
    monkeypatch.setattr(torch, "empty", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    ran = []

    def broken(device):
        ran.append(device.type)
        raise RuntimeError("no kernel for this device")

    reply = session.warm({"device": "cuda", "threads": 0}, checks=(broken, ran.append))
    assert reply["seconds"] >= 0 and [getattr(d, "type", d) for d in ran] == ["cuda", "cuda"]


def test_the_warm_up_checks_run_their_first_calls_anywhere():
    # On a GPU they load the kernels a first trial would; on the CPU the same calls simply run.
    from kforge_worker.checks import compare, precision, runtime_checks
    from kforge_worker.exchange import tensors

    for check in (tensors.ready_digest, compare.ready_device, precision.ready_device, runtime_checks.ready_device):
        check(torch.device("cpu"))


def test_a_process_with_its_own_cache_rule_keeps_or_hands_back_by_it(monkeypatch):
    gib = 1 << 30
    state = {"emptied": 0, "keep": False}
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda: 20 * gib)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: 2 * gib)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (100 * gib, 140 * gib))  # over half free
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: state.update(emptied=state["emptied"] + 1))
    monkeypatch.delenv(protocol.COMMAND_LOG, raising=False)
    seen = []
    session.set_cache_rule(lambda free, total: seen.append((free, total)) or state["keep"])
    try:
        session.after_command("check", 0.0, {"trial": 1})
        assert state["emptied"] == 1 and seen == [(100 * gib, 140 * gib)]
        state["keep"] = True
        session.after_command("make_trial", 0.0, {"trial": 2})
        assert state["emptied"] == 1
        session.after_command("time", 0.0)  # not a correctness trial's command: handed back whatever the rule
        assert state["emptied"] == 2
    finally:
        session.set_cache_rule(None)
