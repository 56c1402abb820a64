"""Exceptions that the worker turns into EvalResult statuses."""

# A kernel that does not build: raised by the kernel libraries, which live in kforge_kernels.
# Re-exported so the worker names all its statuses' exceptions from one module (candidates written
# before that package existed say kforge_worker.errors, the alias beside __main__).
from kforge_kernels.errors import CompileError  # noqa: F401


class ProblemError(Exception):
    """The reference problem itself is broken (not the candidate's fault)."""


class OverrideError(ProblemError):
    """A --set the problem cannot take (an unknown name, a value of the wrong kind): the user's input,
    said in full by the message, so it is reported without the worker's traceback."""


class EnvironmentProblem(Exception):
    """This machine cannot evaluate at all (no torch, no GPU for a GPU target): neither the
    problem's fault nor the candidate's. kforge reports it as ``environment_error``."""
