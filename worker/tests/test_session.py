"""The worker's warm-up imports the target's [worker] preload modules, and only those; loading commands
freeze what they leave for the cyclic collector."""

import sys

from kforge_worker import session


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
        session.after_command("run", 0.0)
        assert gc.get_freeze_count() == 0
        session.after_command("load_candidate", 0.0)
        assert gc.get_freeze_count() > 1000  # torch's own objects at least
    finally:
        gc.unfreeze()


def test_timing_preparation_freezes_and_a_reference_reset_unfreezes():
    # prepare_timing compiles the torch.compile baseline (many objects, alive for the evaluation); a
    # reference process kept for the next evaluation lets the collector see them again at its reset.
    import gc

    from kforge_worker import reference

    gc.unfreeze()
    try:
        session.after_command("prepare_timing", 0.0)
        assert gc.get_freeze_count() > 1000
        reference.ReferenceSession().reset({})
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
