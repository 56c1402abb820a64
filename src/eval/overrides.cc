#include "eval/overrides.h"

#include <fmt/format.h>

#include "util/errors.h"

namespace kforge {

std::map<std::string, std::string> parse_overrides(const std::vector<std::string>& sets) {
  std::map<std::string, std::string> out;
  for (const auto& s : sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(fmt::format("--set expects NAME=VALUE, got '{}'", s));
    out[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return out;
}

}  // namespace kforge
