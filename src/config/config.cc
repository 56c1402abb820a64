#include "config/config.h"

#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "util/errors.h"
#include "util/paths.h"

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

const std::vector<KnownKey>& known_keys() {
  using T = KnownKey::Type;
  // The readers: cli/store_path.cc and eval/worker_launch.cc callers (worker, store, sandbox), the
  // eval/run/bench commands (checks, bench),
  // llm/settings.cc (everything under llm).
  static const std::vector<KnownKey> keys = {
      {"worker.python", T::kString},
      {"store.path", T::kString},
      {"checks.kernels_only", T::kBoolean},
      {"bench.executor", T::kString},
      {"bench.ray_address", T::kString},
      {"sandbox.tmp_gb", T::kNumber},
      {"sandbox.memory_gb", T::kNumber},
      {"sandbox.uid", T::kNumber},
      {"memory.device_gb", T::kNumber},
      {"llm.provider", T::kString},
      {"llm.base_url", T::kString},
      {"llm.max_tokens", T::kNumber},
      {"llm.temperature", T::kNumber},
      {"llm.stream", T::kBoolean},
      {"llm.openai.base_url", T::kString},
      {"llm.openai.max_tokens_field", T::kString},
      {"llm.anthropic.base_url", T::kString},
      {"llm.timeouts.connect_s", T::kNumber},
      {"llm.timeouts.read_s", T::kNumber},
      {"llm.timeouts.request_s", T::kNumber},
      {"llm.retry.max_attempts", T::kNumber},
      {"llm.retry.base_delay_s", T::kNumber},
      {"llm.retry.max_delay_s", T::kNumber},
      {"llm.retry.max_total_s", T::kNumber},
      {"llm.exec.timeout_s", T::kNumber},
      {"llm.manual.poll_interval_s", T::kNumber},
      {"llm.manual.timeout_s", T::kNumber},
      {"llm.api_keys.*", T::kString},
      {"llm.prices.*.input_per_mtok", T::kNumber},
      {"llm.prices.*.output_per_mtok", T::kNumber},
  };
  return keys;
}

namespace {

const char* type_name(KnownKey::Type t) {
  switch (t) {
    case KnownKey::Type::kString: return "a string";
    case KnownKey::Type::kNumber: return "a number";
    case KnownKey::Type::kBoolean: return "true or false";
  }
  return "";
}

bool has_type(const toml::node& node, KnownKey::Type t) {
  switch (t) {
    case KnownKey::Type::kString: return node.is_string();
    case KnownKey::Type::kNumber: return node.is_integer() || node.is_floating_point();
    case KnownKey::Type::kBoolean: return node.is_boolean();
  }
  return false;
}

std::vector<std::string_view> segments(std::string_view dotted) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    std::size_t end = dotted.find('.', start);
    out.push_back(dotted.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

// Whether `path` matches the first path.size() segments of the pattern (all of them when `whole`).
bool matches(const std::vector<std::string>& path, std::string_view pattern, bool whole) {
  auto pat = segments(pattern);
  if (whole ? pat.size() != path.size() : pat.size() <= path.size()) return false;
  for (std::size_t i = 0; i < path.size(); ++i)
    if (pat[i] != "*" && pat[i] != path[i]) return false;
  return true;
}

// A table is known when some key lies below it.
bool known_table(const std::vector<std::string>& path) {
  for (const auto& k : known_keys())
    if (matches(path, k.dotted, false)) return true;
  return false;
}

void check_table(const toml::table& table, std::vector<std::string>& path, std::vector<std::string>& problems) {
  for (const auto& [key, node] : table) {
    path.emplace_back(key.str());
    const std::string dotted = fmt::format("{}", fmt::join(path, "."));
    if (const toml::table* sub = node.as_table()) {
      if (known_table(path)) check_table(*sub, path, problems);
      else problems.push_back(fmt::format("unknown table [{}]", dotted));
    } else {
      const KnownKey* known = nullptr;
      for (const auto& k : known_keys())
        if (matches(path, k.dotted, true)) known = &k;
      if (!known) problems.push_back(fmt::format("unknown key {}", dotted));
      else if (!has_type(node, known->type))
        problems.push_back(fmt::format("{} must be {}", dotted, type_name(known->type)));
    }
    path.pop_back();
  }
}

}  // namespace

std::vector<std::string> check_keys(const toml::table& table) {
  std::vector<std::string> problems, path;
  check_table(table, path, problems);
  return problems;
}

std::optional<fs::path> default_config_path() {
  if (const char* env = std::getenv("KFORGE_CONFIG"); env && *env) return fs::path(env);
  if (fs::exists("kforge.toml")) return fs::path("kforge.toml");
  for (const fs::path& p : {user_config_dir() / "kforge.toml", legacy_dir() / "kforge.toml"})
    if (fs::exists(p)) return p;
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
  for (const auto& problem : check_keys(config.table)) {
    if (problem.starts_with("unknown ")) spdlog::warn("{}: {} (ignored; see docs/config.md)", path->string(), problem);
    else throw InputError(fmt::format("{}: {}", path->string(), problem));
  }
  config.path = *path;
  return config;
}

std::optional<double> device_memory_gb(const Config& config) {
  auto gb = config.get_number("memory.device_gb");
  if (gb && !(*gb > 0 && *gb <= 1e6))
    throw InputError(fmt::format("{}: [memory] device_gb must be a positive number of GiB, not {}", config.path.string(), *gb));
  return gb;
}

SandboxConfig sandbox_config(const Config& config) {
  SandboxConfig out;
  if (auto gb = config.get_number("sandbox.tmp_gb")) {
    if (!(*gb > 0) || *gb > 1024)
      throw InputError(fmt::format("{}: [sandbox] tmp_gb must be between 0 and 1024 GiB, not {}", config.path.string(), *gb));
    out.tmp_gb = *gb;
  }
  if (auto gb = config.get_number("sandbox.memory_gb")) {
    if (!(*gb > 0) || *gb > 1e6)
      throw InputError(fmt::format("{}: [sandbox] memory_gb must be a positive number of GiB, not {}", config.path.string(), *gb));
    out.memory_gb = *gb;
  }
  if (auto uid = config.get_number("sandbox.uid")) {
    if (*uid < 1 || *uid > 4294967294.0 || *uid != static_cast<double>(static_cast<unsigned>(*uid)))
      throw InputError(fmt::format("{}: [sandbox] uid must be a non-zero integer uid, not {}", config.path.string(), *uid));
    out.uid = static_cast<unsigned>(*uid);
  }
  return out;
}

}  // namespace kforge
