#pragma once
// Finding programs the way a shell does, and the installation folder a program belongs to.
#include <filesystem>
#include <optional>
#include <string>

namespace kforge {

// `program` itself when it names a path, else the first executable of that name on `path_env`
// (a PATH value); nullopt when there is none.
std::optional<std::filesystem::path> find_program(const std::string& program, const std::string& path_env);

// The installation prefix of a toolchain outside the system folders, for a program such as
// /opt/gcc/bin/gcc: the real path's parent of its bin/ folder (/opt/gcc). nullopt for programs under
// /usr, /bin, /sbin, and for anything whose prefix would be the root, a home folder or /tmp (binding
// those into a sandbox would show far more than a compiler).
std::optional<std::filesystem::path> toolchain_prefix(const std::filesystem::path& program);

}  // namespace kforge
