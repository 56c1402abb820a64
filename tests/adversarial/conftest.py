"""The adversarial suite runs the built `kforge` binary, like the end-to-end tests (same helper)."""

import importlib.util
import sys
from pathlib import Path

# tests/e2e/e2e_support.py, importable however pytest was started (its folder may not be on sys.path).
if "e2e_support" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("e2e_support", Path(__file__).resolve().parent.parent / "e2e" /
                                                   "e2e_support.py")
    sys.modules["e2e_support"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["e2e_support"])
from e2e_support import kforge, kforge_bin  # noqa: E402,F401  (fixtures)
