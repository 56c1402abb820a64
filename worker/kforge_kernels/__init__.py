"""kforge's kernel libraries: what a candidate imports to build and launch its kernels.

    from kforge_kernels import native   # C++ through g++ and ctypes (cpu)
    from kforge_kernels import cuda     # CUDA C++ through NVRTC (cuda)
    from kforge_kernels import ocl      # OpenCL C through pyopencl (opencl)
    from kforge_kernels import wgsl     # WGSL compute shaders through wgpu (wgpu)
    from kforge_kernels import hip      # HIP C++ through hipcc (hip)

They run inside the candidate's process and sandbox, beside the candidate's own code, and are kept
apart from the evaluation harness (kforge_worker), which never trusts them. The other modules here
are the builders' plumbing: build events (buildinfo), the channel to kforge's trusted builder
(build_client), load_inline's shared cache (inline_cache) and fixes to third-party code (hooks).

Each library is self-contained (stdlib, torch and its own toolchain) so that `kforge best` can copy it
verbatim into a standalone file. ``from kforge_worker import native`` (and the others) still works:
candidates, transcripts and standalone files written before this package existed use it.
"""

# The modules a candidate may import. The static checks' import allowlist and the compatibility
# names under kforge_worker follow this tuple; the rest of the package is not for candidates.
LIBRARIES = ("native", "cuda", "ocl", "wgsl", "hip", "errors")
