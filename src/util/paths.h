// Where kforge finds its data (worker package, targets, prompts) and keeps its state.
#pragma once

#include <filesystem>

namespace kforge {

// The installation's data directory: $KFORGE_HOME, else the directory above the executable's
// directory when it holds worker/kforge_worker (a build tree or an unpacked bundle), else the
// source tree kforge was built from.
std::filesystem::path data_dir();

// kforge's state directory for the store, logs and caches: $KFORGE_STATE_DIR, else ~/.kforge.
std::filesystem::path state_dir();

// Persistent compile caches shared by all evaluations: $KFORGE_CACHE_DIR, else ~/.cache/kforge.
std::filesystem::path cache_dir();

// Creates a fresh private directory under $TMPDIR (mode 0700) and returns it.
std::filesystem::path make_temp_dir(const std::string& prefix);

}  // namespace kforge
