"""The adversarial suite runs the built `kforge` binary, like the end-to-end tests (same fixture)."""

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

# The e2e conftest, loaded under another name (both files are called conftest.py).
_spec = importlib.util.spec_from_file_location("e2e_conftest", HERE.parent / "e2e" / "conftest.py")
_e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_e2e)
Kforge = _e2e.Kforge
kforge_bin = _e2e.kforge_bin


@pytest.fixture
def kforge(kforge_bin, tmp_path):
    return Kforge(kforge_bin, tmp_path)


def problem(name: str) -> Path:
    return HERE / "problems" / f"{name}.py"
