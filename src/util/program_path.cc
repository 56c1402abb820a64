#include "util/program_path.h"

#include <unistd.h>

#include <sstream>

namespace kforge {

namespace fs = std::filesystem;

std::optional<fs::path> find_program(const std::string& program, const std::string& path_env) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos)
    return ::access(program.c_str(), X_OK) == 0 ? std::optional<fs::path>(program) : std::nullopt;
  std::stringstream dirs(path_env);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::optional<fs::path> toolchain_prefix(const fs::path& program) {
  std::error_code ec;
  const fs::path real = fs::canonical(program, ec);
  if (ec) return std::nullopt;
  fs::path bin = real.parent_path();
  const fs::path prefix = bin.filename() == "bin" ? bin.parent_path() : bin;
  auto under = [&](const fs::path& root) {
    auto [r, p] = std::mismatch(root.begin(), root.end(), prefix.begin(), prefix.end());
    return r == root.end();
  };
  for (const char* system : {"/usr", "/bin", "/sbin", "/lib", "/lib64"})
    if (under(system)) return std::nullopt;
  for (const char* never : {"/home", "/root", "/tmp", "/var/tmp", "/run", "/proc", "/dev"})
    if (under(never)) return std::nullopt;
  if (prefix == prefix.root_path() || std::distance(prefix.begin(), prefix.end()) < 2) return std::nullopt;
  return prefix;
}

}  // namespace kforge
