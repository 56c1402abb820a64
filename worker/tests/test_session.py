"""The worker's warm-up imports the target's [worker] preload modules, and only those."""

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
