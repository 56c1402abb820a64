"""Fixtures of the end-to-end tests (defined with the helpers in e2e_support.py)."""

from e2e_support import home, kforge, kforge_bin  # noqa: F401  (fixtures)
