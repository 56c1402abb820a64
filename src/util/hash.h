// Content hashes for candidates and cache keys.
#pragma once

#include <string>
#include <string_view>

namespace kforge {

std::string sha256_hex(std::string_view data);

}  // namespace kforge
