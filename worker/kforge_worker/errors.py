"""Exceptions that the worker turns into EvalResult statuses."""


class CompileError(Exception):
    """A candidate's kernel source failed to build. ``log`` holds the compiler's full output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class ProblemError(Exception):
    """The reference problem itself is broken (not the candidate's fault)."""


class EnvironmentProblem(Exception):
    """This machine cannot evaluate at all (no torch, no GPU for a GPU target): neither the
    problem's fault nor the candidate's. kforge reports it as ``environment_error``."""
