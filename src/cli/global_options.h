// Options accepted by every subcommand.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace kforge {

struct GlobalOptions {
  std::optional<std::filesystem::path> config_path;  // --config
  bool verbose = false;                               // --verbose
  bool quiet = false;                                 // --quiet
};

}  // namespace kforge
