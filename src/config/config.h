// kforge.toml: the user's configuration file. See docs/config.md for every key, and
// examples/kforge.toml for an annotated example.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

namespace kforge {

struct Config {
  std::filesystem::path path;  // empty when no file was found
  toml::table table;

  // Value at a dotted key ("worker.python"), if present and a string.
  std::optional<std::string> get_string(std::string_view dotted_key) const;
  std::optional<double> get_number(std::string_view dotted_key) const;
};

// One key kforge reads. In `dotted`, "*" stands for any one name chosen by the user (a provider
// kind under llm.api_keys, a "KIND:MODEL" under llm.prices).
struct KnownKey {
  enum class Type { kString, kNumber, kBoolean };
  std::string_view dotted;
  Type type;
};

// Every key of kforge.toml that some part of kforge reads.
const std::vector<KnownKey>& known_keys();

// The problems of a parsed file against known_keys(), one line each: a key kforge does not read
// ("unknown key worker.pyhton") or a known key of the wrong type ("worker.python must be a string").
std::vector<std::string> check_keys(const toml::table& table);

// [sandbox]: the candidate's private tmpfs (tmp_gb, default 2 GiB), its memory (memory_gb, default half
// the host's, memory files and tmpfs pages included) and the host uid it runs under when
// kforge is root (uid, default 65534). Throws kforge::InputError on a value out of range.
struct SandboxConfig {
  double tmp_gb = 2.0;
  double memory_gb = 0;  // [sandbox] memory_gb: the candidate's memory cgroup limit; 0 = half the host's memory
  std::optional<unsigned> uid;
};
SandboxConfig sandbox_config(const Config& config);

// [memory] device_gb: the most memory kforge's evaluations may hold on one device together, GiB
// (unset: the device's free memory less a margin; docs/bench.md#memory). Throws kforge::InputError
// on a value that is not positive.
std::optional<double> device_memory_gb(const Config& config);

// Default location: $KFORGE_CONFIG, else ./kforge.toml, else $XDG_CONFIG_HOME/kforge/kforge.toml
// (~/.config/kforge/kforge.toml), else ~/.kforge/kforge.toml (earlier versions).
std::optional<std::filesystem::path> default_config_path();

// Loads `explicit_path` (an error if missing) or the default location (fine if absent).
// Throws kforge::InputError with a one-line message on a parse error or a known key of the wrong
// type; an unknown key (a typo, or a key of a newer version) is logged as a warning.
Config load_config(const std::optional<std::filesystem::path>& explicit_path);

}  // namespace kforge
