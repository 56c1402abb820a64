// Small file helpers shared by the commands, the evaluator and the loop.
#pragma once

#include <filesystem>
#include <string>

namespace kforge {

// The whole file as bytes; throws InputError naming the file when it cannot be opened.
std::string read_file(const std::filesystem::path& path);

}  // namespace kforge
