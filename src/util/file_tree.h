// Measuring and removing a folder tree that untrusted code wrote, however deep or wide: the walk
// holds one descriptor at a time and names entries relative to it (openat, unlinkat), never by a
// path, so 21,000 nested folders (paths past PATH_MAX) or a folder of mode 000 stop neither, and a
// symbolic link is never followed. It is not recursive: the depth costs a few bytes per level.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace kforge {

struct TreeSize {
  std::uint64_t bytes = 0;    // sizes of the regular files in it
  std::uint64_t entries = 0;  // files, folders, links... (inodes) below the root
  bool complete = true;       // false: some folder could not be read, or the walk stopped at a limit
};

// What lies under `root` (a folder). `max_entries`: the walk stops once it has counted more (the
// size is then at least what it says).
TreeSize measure_tree(const std::filesystem::path& root, std::optional<std::uint64_t> max_entries = std::nullopt);

// Removes `root` and everything under it; true when it is gone (or was never there).
bool remove_tree(const std::filesystem::path& root);

}  // namespace kforge
