// The run's deliverable: best.py, the verified candidate itself (its imports of kforge's kernel
// libraries as written, `kforge_worker.<library>` spelled `kforge_kernels.<library>`), under a header
// saying it is generated and how it was verified, with `Model` bound to `ModelNew` so the file drops
// into user code in place of the reference. Nothing is added that kforge's static checks would
// refuse, so `kforge eval PROBLEM best.py` judges exactly what the run judged. The libraries it
// imports are written beside it (a kforge_kernels folder), so it also runs without kforge installed.
#pragma once

#include <filesystem>
#include <string>

namespace kforge::loop {

// `helper_dir` is the kforge_kernels package directory. `header` is written as a comment block at
// the top. Throws InputError when the candidate imports a library that does not exist.
std::string make_standalone(const std::string& candidate_source, const std::filesystem::path& helper_dir,
                            const std::string& header);

// True when the candidate imports one of kforge's kernel libraries.
bool imports_kernel_libraries(const std::string& candidate_source);

// Copies the kforge_kernels package (its .py files) to `out_dir`/kforge_kernels.
void write_kernel_libraries(const std::filesystem::path& helper_dir, const std::filesystem::path& out_dir);

}  // namespace kforge::loop
