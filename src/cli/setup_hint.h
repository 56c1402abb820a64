// What to run to make the Python environment kforge's workers need, for the layout kforge runs from:
// a build tree has scripts/setup.sh, an installed copy (`cmake --install`, the .deb) has
// share/kforge/setup-worker.sh, an unpacked bundle (scripts/bundle.sh) has neither.
#pragma once

#include <filesystem>
#include <string>

namespace kforge {

// `data` is kforge's data directory (data_dir()); `venv` where setup-worker.sh makes its environment.
std::string worker_setup_hint(const std::filesystem::path& data, const std::filesystem::path& venv);

}  // namespace kforge
