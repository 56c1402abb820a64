"""Build folders of kforge's builder: emptied between attempts, published into the shared cache.

Shared by the builder (sandboxed_build) and what it calls to make headers (lean_aten, pch_builder),
so neither has to import the builder back.
"""

import os
import shutil


class BuildFailed(Exception):
    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


def publish(staging: str, folder: str, done) -> None:
    """Makes a staged folder's files (its subfolders' too) read-only to all but kforge and renames it
    to ``folder`` atomically; where another build published the same content first (``done()``),
    theirs stays."""
    for root, dirs, files in os.walk(staging):
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    os.chmod(staging, 0o755)
    try:
        os.rename(staging, folder)
    except OSError:
        if not done():
            raise


def empty(folder: str) -> None:
    """Removes everything in ``folder`` (a build folder the sandboxed compiler could write; its
    processes are gone: the sandbox's PID namespace ends with its first process)."""

    def writable_then_retry(function, path, _):
        os.chmod(os.path.dirname(path), 0o700)
        function(path)

    try:
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, onerror=writable_then_retry)
            else:
                os.unlink(entry.path)
    except OSError as e:
        raise BuildFailed(f"the build folder could not be emptied for the build as written: {e}") from None
