"""Fixtures of the end-to-end tests (helpers: e2e_support.py)."""

import pytest

from e2e_support import Kforge, kforge_binary


@pytest.fixture(scope="session")
def kforge_bin():
    binary = kforge_binary()
    if not binary.exists():
        pytest.fail(f"{binary} not built: run scripts/setup.sh first")
    return binary


@pytest.fixture
def kforge(kforge_bin, tmp_path):
    return Kforge(kforge_bin, tmp_path)
