"""The keyring filter (kforge_worker/common/keyrings.py): in a child process, keyring calls fail with EPERM
once it is installed and work before; everything else still works."""

import ctypes
import errno
import os
import platform

import pytest

from kforge_worker.common import keyrings

SYS_ADD_KEY = {"x86_64": 248, "aarch64": 217}.get(platform.machine())
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
KEYCTL_JOIN_SESSION_KEYRING = 1
SESSION_KEYRING = -3


def _add_key_in_child(filtered: bool) -> int:
    """0 where add_key to the session keyring worked in a child, else its errno."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            # A session keyring of its own, gone with the child: the test leaves no key behind.
            libc.syscall(SYS_KEYCTL, KEYCTL_JOIN_SESSION_KEYRING, None)
            if filtered:
                keyrings.refuse()
            key = libc.syscall(SYS_ADD_KEY, b"user", b"kforge-filter-test", b"x", 1, SESSION_KEYRING)
            code = 0 if key >= 0 else ctypes.get_errno()
            with open(os.devnull, "w") as f:  # ordinary calls still work
                f.write("ok")
        except BaseException:
            code = 99
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(SYS_ADD_KEY is None, reason=f"no syscall table for {platform.machine()} in this test")
def test_keyring_calls_fail_once_the_filter_is_installed():
    unfiltered = _add_key_in_child(False)
    if unfiltered != 0:
        pytest.skip(f"this kernel refuses keyrings already (errno {unfiltered}): the test would prove nothing")
    assert _add_key_in_child(True) == errno.EPERM
