"""Changes to third-party code that the kernel libraries rely on, installed once by the candidate
worker before a candidate is imported: load_inline's shared, content-keyed cache (inline_cache) and
the NumPy 2 fix of Triton's CPU interpreter (triton_interp). Each does nothing where its library is
absent or not in use."""

from kforge_kernels import inline_cache, triton_interp


def install() -> None:
    inline_cache.install()
    triton_interp.install()
