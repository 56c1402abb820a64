#include "util/files.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "util/errors.h"

namespace kforge {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("cannot read {}", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace kforge
