// The run's deliverable is one file that runs without kforge installed: every import of one of
// kforge's kernel libraries (`kforge_kernels.native`, `.ocl`, ..., or the same under the older name
// `kforge_worker`) is replaced by the library's own source, embedded in the file and executed as a
// module, and `Model` is bound to `ModelNew` so the file drops into user code in place of the reference.
#pragma once

#include <filesystem>
#include <string>

namespace kforge::loop {

// `helper_dir` is the kforge_kernels package directory. `header` is written as a comment block at
// the top. Throws InputError when the candidate imports a helper that does not exist.
std::string make_standalone(const std::string& candidate_source, const std::filesystem::path& helper_dir,
                            const std::string& header);

}  // namespace kforge::loop
