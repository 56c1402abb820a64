// `--set NAME=VALUE` arguments, shared by `kforge eval` and `kforge run`.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kforge {

// Splits each NAME=VALUE at its first '='; throws InputError on a missing '=' or name.
std::map<std::string, std::string> parse_overrides(const std::vector<std::string>& sets);

}  // namespace kforge
