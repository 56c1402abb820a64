#include "config/config.h"

#include <cstdlib>

#include <fmt/format.h>

#include "util/errors.h"

namespace kforge {

namespace fs = std::filesystem;

std::optional<std::string> Config::get_string(std::string_view dotted_key) const {
  auto node = table.at_path(dotted_key);
  if (auto v = node.value<std::string>()) return *v;
  return std::nullopt;
}

std::optional<double> Config::get_number(std::string_view dotted_key) const {
  auto node = table.at_path(dotted_key);
  if (auto v = node.value<double>()) return *v;
  return std::nullopt;
}

std::optional<fs::path> default_config_path() {
  if (const char* env = std::getenv("KFORGE_CONFIG"); env && *env) return fs::path(env);
  if (fs::exists("kforge.toml")) return fs::path("kforge.toml");
  if (const char* home = std::getenv("HOME"); home && *home) {
    fs::path p = fs::path(home) / ".kforge" / "kforge.toml";
    if (fs::exists(p)) return p;
  }
  return std::nullopt;
}

Config load_config(const std::optional<fs::path>& explicit_path) {
  Config config;
  std::optional<fs::path> path = explicit_path ? explicit_path : default_config_path();
  if (!path) return config;
  if (!fs::exists(*path)) throw InputError(fmt::format("config file not found: {}", path->string()));
  try {
    config.table = toml::parse_file(path->string());
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw InputError(fmt::format("{}:{}:{}: invalid TOML: {}", path->string(), where.line,
                                 where.column, e.description()));
  }
  config.path = *path;
  return config;
}

SandboxConfig sandbox_config(const Config& config) {
  SandboxConfig out;
  if (auto gb = config.get_number("sandbox.tmp_gb")) {
    if (!(*gb > 0) || *gb > 1024)
      throw InputError(fmt::format("{}: [sandbox] tmp_gb must be between 0 and 1024 GiB, not {}", config.path.string(), *gb));
    out.tmp_gb = *gb;
  }
  if (auto uid = config.get_number("sandbox.uid")) {
    if (*uid < 1 || *uid > 4294967294.0 || *uid != static_cast<double>(static_cast<unsigned>(*uid)))
      throw InputError(fmt::format("{}: [sandbox] uid must be a non-zero integer uid, not {}", config.path.string(), *uid));
    out.uid = static_cast<unsigned>(*uid);
  }
  return out;
}

}  // namespace kforge
