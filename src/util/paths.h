// Where kforge finds its data (worker package, targets, prompts) and keeps its state.
//
// Per-user directories follow the XDG base directory specification (XDG_DATA_HOME,
// XDG_CONFIG_HOME, XDG_CACHE_HOME; relative values are ignored, as the specification says).
// A ~/.kforge written by earlier versions keeps being used while it exists, so no store or
// configuration is left behind.
#pragma once

#include <filesystem>
#include <string>

namespace kforge {

// The installation's data directory: $KFORGE_HOME, else the directory above the executable's
// directory when it holds worker/kforge_worker (a build tree or an unpacked bundle), else
// <prefix>/share/kforge when the executable is <prefix>/bin/kforge (`cmake --install`, the .deb),
// else the source tree kforge was built from.
std::filesystem::path data_dir();

// kforge's state directory for the store and logs: $KFORGE_STATE_DIR, else ~/.kforge when it
// exists (earlier versions), else $XDG_DATA_HOME/kforge (~/.local/share/kforge).
std::filesystem::path state_dir();

// Persistent compile caches shared by all evaluations: $KFORGE_CACHE_DIR, else
// $XDG_CACHE_HOME/kforge (~/.cache/kforge).
std::filesystem::path cache_dir();

// Where the per-user kforge.toml lives: $XDG_CONFIG_HOME/kforge (~/.config/kforge).
std::filesystem::path user_config_dir();

// ~/.kforge, the single directory earlier versions kept everything in.
std::filesystem::path legacy_dir();

// The worker environment made by share/kforge/setup-worker.sh for an installed kforge:
// $XDG_DATA_HOME/kforge/venv.
std::filesystem::path user_worker_venv();

// Creates a fresh private directory under $TMPDIR (mode 0700) and returns it.
std::filesystem::path make_temp_dir(const std::string& prefix);

}  // namespace kforge
