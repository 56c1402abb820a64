"""Compatibility fix for Triton's CPU interpreter (TRITON_INTERPRET=1, used by --compile-only).

Triton 3.6's interpreter hands scalar kernel arguments around as one-element arrays and converts
them with ``int(array)``, which NumPy 2 refuses for arrays that are not 0-dimensional: every
``for i in range(0, n)`` over a scalar argument then fails. Indexing through ``.item()`` fixes it.
"""

import os


def install() -> None:
    if os.environ.get("TRITON_INTERPRET", "") in ("", "0"):
        return
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_kforge_fixed", False):
        return

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patch_lang_tensor._kforge_fixed = True
    interpreter._patch_lang_tensor = patch_lang_tensor
