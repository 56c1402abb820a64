"""kforge's trusted builder (``python -m kforge_worker.builder.sandboxed_build``): compiles what a
candidate asked for outside its sandbox and installs it into the shared cache (sandboxed_build,
build_folders, build_store), with the machinery of load_inline builds: the build folder written
without building (inline_plan), the torch headers a CUDA source is compiled against (cuda_header_choice,
lean_aten, cuda_headers/), nvcc's passes side by side (nvcc_lanes), and precompiled headers (build_pch,
pch_builder, pch_produce, pch_store, host_cxx, bin/kforge-g++). host_cxx, pch_produce and nvcc_lanes
also run as scripts, importing their neighbours by file.

May import: common.
"""
