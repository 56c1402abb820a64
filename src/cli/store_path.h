// Which SQLite store a command uses.
#pragma once

#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "config/config.h"

namespace kforge {

// `--db` when given, else kforge.toml's store.path, else Store::default_path().
std::filesystem::path store_path(const std::string& db_flag, const Config& config);

// Adds `--db FILE` (the store a command reads and writes) to `cmd`.
CLI::Option* add_db_option(CLI::App* cmd, std::string& db_flag);

}  // namespace kforge
