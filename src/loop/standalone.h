// The run's deliverable is one file that runs without kforge installed: every
// `kforge_worker.<helper>` import of the candidate (native, ocl, ...) is replaced by the helper's
// own source, embedded in the file and executed as a module, and `Model` is bound to `ModelNew`
// so the file drops into user code in place of the reference.
#pragma once

#include <filesystem>
#include <string>

namespace kforge::loop {

// `helper_dir` is the kforge_worker package directory. `header` is written as a comment block at
// the top. Throws InputError when the candidate imports a helper that does not exist.
std::string make_standalone(const std::string& candidate_source, const std::filesystem::path& helper_dir,
                            const std::string& header);

}  // namespace kforge::loop
