"""Exceptions that the worker turns into EvalResult statuses."""


class CompileError(Exception):
    """A candidate's kernel source failed to build. ``log`` holds the compiler's full output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class ProblemError(Exception):
    """The reference problem itself is broken (not the candidate's fault)."""
