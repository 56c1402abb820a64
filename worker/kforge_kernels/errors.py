"""The error a kernel library raises when a kernel does not build, and how the worker recognises the
build errors of the toolchains candidates call directly.

Self-contained on purpose (stdlib only): it may be copied verbatim into standalone files.
"""


class CompileError(Exception):
    """A candidate's kernel source failed to build. ``log`` holds the compiler's full output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


# Exception type names with which toolchains report a kernel that does not build: Triton's
# CompilationError and CompileTimeAssertionFailure (and the DSLs built on it).
_TOOLCHAIN_BUILD_ERRORS = ("CompilationError", "CompileTimeAssertionFailure")


def is_toolchain_build_error(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a toolchain rather than as a CompileError, reports a kernel that
    failed to build (its message then holds the compiler's output)."""
    text = str(exc)
    # torch.utils.cpp_extension: RuntimeError("Error building extension '<name>'...") with the
    # ninja/compiler output appended; pyopencl: clBuildProgram's BUILD_PROGRAM_FAILURE.
    return (isinstance(exc, RuntimeError) and text.startswith("Error building extension")) \
        or type(exc).__name__ in _TOOLCHAIN_BUILD_ERRORS or "BUILD_PROGRAM_FAILURE" in text
