"""A seccomp filter that refuses the kernel's keyring calls (add_key, request_key, keyctl) with EPERM.

The keyrings of a uid are shared by every process of that uid and outlive them: without the filter a
candidate could leave a key that a later candidate (the same sandbox uid) reads back. No worker or
compiler needs them. The candidate's worker installs it on itself when it starts, before any candidate
code is imported, and kforge's builder before it runs a compiler; every process started afterwards
inherits it, and none can remove it. Standard library only (ctypes and prctl).
"""

import ctypes
import errno
import platform
import struct

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
# Syscall numbers per architecture (<asm/unistd*.h>), with each one's AUDIT_ARCH value: add_key,
# request_key, keyctl. x86_64 covers the x32 ABI too (its numbers carry bit 30, masked off below);
# 32-bit code on a 64-bit kernel has its own numbers.
_ARCHES = (
    (0xC000003E, (248, 249, 250)),  # x86_64
    (0x40000003, (286, 287, 288)),  # i386
    (0xC00000B7, (217, 218, 219)),  # aarch64
    (0x40000028, (309, 310, 311)),  # arm
)
_LD_W_ABS, _JEQ_K, _AND_K, _RET_K = 0x20, 0x15, 0x54, 0x06
_ARCH_OFFSET, _NR_OFFSET = 4, 0  # struct seccomp_data: int nr; __u32 arch; ...


def program() -> bytes:
    """The BPF program as struct sock_filter entries (u16 code, u8 jt, u8 jf, u32 k)."""
    ins = []
    for arch, (a, b, c) in _ARCHES:
        ins += [(_LD_W_ABS, 0, 0, _ARCH_OFFSET), (_JEQ_K, 0, 7, arch), (_LD_W_ABS, 0, 0, _NR_OFFSET),
                (_AND_K, 0, 0, ~0x40000000 & 0xFFFFFFFF), (_JEQ_K, 3, 0, a), (_JEQ_K, 2, 0, b), (_JEQ_K, 1, 0, c),
                (_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_ERRNO | errno.EPERM)]
    ins.append((_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(struct.pack("=HBBI", *i) for i in ins)


def refuse() -> bool:
    """Installs the filter on this process (and so on everything it starts). False where the kernel has
    no seccomp filters (EINVAL: built without them); raises OSError where it refuses this one."""
    if platform.system() != "Linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    code = program()
    filters = ctypes.create_string_buffer(code, len(code))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = Program(len(code) // 8, ctypes.addressof(filters))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0 or \
            libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        if err == errno.EINVAL:
            return False
        raise OSError(err, f"cannot refuse keyring calls: {errno.errorcode.get(err, err)}")
    return True
