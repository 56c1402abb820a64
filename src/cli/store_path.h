// Which SQLite store a command uses.
#pragma once

#include <filesystem>
#include <string>

#include "config/config.h"

namespace kforge {

// `--db` when given, else kforge.toml's store.path, else Store::default_path().
std::filesystem::path store_path(const std::string& db_flag, const Config& config);

}  // namespace kforge
