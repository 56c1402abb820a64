// kforge.toml: the user's configuration file. See docs/config.md for every key.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <toml++/toml.h>

namespace kforge {

struct Config {
  std::filesystem::path path;  // empty when no file was found
  toml::table table;

  // Value at a dotted key ("worker.python"), if present and a string.
  std::optional<std::string> get_string(std::string_view dotted_key) const;
  std::optional<double> get_number(std::string_view dotted_key) const;
};

// [sandbox]: the candidate's private tmpfs (tmp_gb, default 2 GiB) and the host uid it runs under when
// kforge is root (uid, default 65534). Throws kforge::InputError on a value out of range.
struct SandboxConfig {
  double tmp_gb = 2.0;
  std::optional<unsigned> uid;
};
SandboxConfig sandbox_config(const Config& config);

// Default location: $KFORGE_CONFIG, else ./kforge.toml, else ~/.kforge/kforge.toml.
std::optional<std::filesystem::path> default_config_path();

// Loads `explicit_path` (an error if missing) or the default location (fine if absent).
// Throws kforge::InputError with a one-line message on a parse error.
Config load_config(const std::optional<std::filesystem::path>& explicit_path);

}  // namespace kforge
