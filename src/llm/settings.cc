// Parsing and validation of the [llm] configuration (see settings.h).
#include "llm/settings.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "llm/secrets.h"
#include "util/errors.h"

namespace kforge::llm {

namespace {

using std::chrono::milliseconds;

std::string where(const Config& config) {
  return config.path.empty() ? std::string("kforge.toml") : config.path.string();
}

const toml::table* table_at(const toml::table& root, std::string_view dotted, const Config& config) {
  auto node = root.at_path(dotted);
  if (!node) return nullptr;
  if (!node.is_table())
    throw InputError(fmt::format("{}: [{}] must be a table", where(config), dotted));
  return node.as_table();
}

std::optional<double> number(const toml::table* t, std::string_view key, std::string_view section,
                             const Config& config) {
  if (!t) return std::nullopt;
  auto node = (*t)[key];
  if (!node) return std::nullopt;
  if (auto v = node.value<double>(); v && (node.is_floating_point() || node.is_integer())) {
    if (!std::isfinite(*v) || *v < 0)
      throw InputError(fmt::format("{}: [{}] {} must be a non-negative number", where(config), section, key));
    return v;
  }
  throw InputError(fmt::format("{}: [{}] {} must be a number", where(config), section, key));
}

std::optional<std::string> string(const toml::table* t, std::string_view key, std::string_view section,
                                  const Config& config) {
  if (!t) return std::nullopt;
  auto node = (*t)[key];
  if (!node) return std::nullopt;
  if (auto v = node.value<std::string>(); v && node.is_string()) return v;
  throw InputError(fmt::format("{}: [{}] {} must be a string", where(config), section, key));
}

std::optional<bool> boolean(const toml::table* t, std::string_view key, std::string_view section,
                            const Config& config) {
  if (!t) return std::nullopt;
  auto node = (*t)[key];
  if (!node) return std::nullopt;
  if (auto v = node.value<bool>(); v && node.is_boolean()) return v;
  throw InputError(fmt::format("{}: [{}] {} must be true or false", where(config), section, key));
}

milliseconds seconds_to_ms(double seconds) { return milliseconds(static_cast<std::int64_t>(seconds * 1000)); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_secret_key_name(std::string_view key) {
  const std::string k = lower(key);
  auto ends = [&](std::string_view suffix) {
    return k.size() >= suffix.size() && k.compare(k.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return k == "api_key" || ends("_api_key") || ends("apikey") || k == "token" || ends("_token") ||
         k.find("secret") != std::string::npos || k.find("password") != std::string::npos;
}

// Collects string values that are secrets anywhere in the file.
void collect_secrets(const toml::table& t, bool under_api_keys, std::vector<std::string>& out) {
  for (const auto& [key, node] : t) {
    const bool secret_here = under_api_keys || is_secret_key_name(key.str());
    if (auto sub = node.as_table()) {
      collect_secrets(*sub, key.str() == "api_keys", out);
    } else if (auto s = node.value<std::string>(); s && secret_here && node.is_string() && !s->empty()) {
      out.push_back(*s);
    }
  }
}

}  // namespace

LlmSettings load_llm_settings(const Config& config) {
  LlmSettings s;

  std::vector<std::string> secrets;
  collect_secrets(config.table, false, secrets);
  if (!secrets.empty()) {
    for (const auto& v : secrets) register_secret(v);
    if (!config.path.empty()) require_private_file(config.path, "an API key or other secret");
  }

  const toml::table* llm = table_at(config.table, "llm", config);
  if (!llm) return s;

  if (auto v = string(llm, "provider", "llm", config)) s.provider = *v;
  if (auto v = string(llm, "base_url", "llm", config)) s.base_url = *v;
  if (auto v = number(llm, "max_tokens", "llm", config)) {
    if (*v < 1 || *v != std::floor(*v))
      throw InputError(fmt::format("{}: [llm] max_tokens must be a positive integer", where(config)));
    s.max_tokens = static_cast<int>(*v);
  }
  s.temperature = number(llm, "temperature", "llm", config);
  if (auto v = boolean(llm, "stream", "llm", config)) s.stream = *v;

  for (const char* kind : {"openai", "anthropic"}) {
    std::string section = fmt::format("llm.{}", kind);
    const toml::table* t = table_at(config.table, section, config);
    if (auto v = string(t, "base_url", section, config)) s.base_urls[kind] = *v;
  }
  if (auto v = string(table_at(config.table, "llm.openai", config), "max_tokens_field", "llm.openai", config)) {
    if (*v != "max_tokens" && *v != "max_completion_tokens")
      throw InputError(fmt::format(
          "{}: [llm.openai] max_tokens_field must be \"max_tokens\" or \"max_completion_tokens\"", where(config)));
    s.openai_max_tokens_field = *v;
  }

  const toml::table* timeouts = table_at(config.table, "llm.timeouts", config);
  if (auto v = number(timeouts, "connect_s", "llm.timeouts", config)) s.timeouts.connect = seconds_to_ms(*v);
  if (auto v = number(timeouts, "read_s", "llm.timeouts", config)) s.timeouts.read = seconds_to_ms(*v);
  if (auto v = number(timeouts, "request_s", "llm.timeouts", config)) s.timeouts.request = seconds_to_ms(*v);

  const toml::table* retry = table_at(config.table, "llm.retry", config);
  if (auto v = number(retry, "max_attempts", "llm.retry", config)) {
    if (*v < 1 || *v != std::floor(*v))
      throw InputError(fmt::format("{}: [llm.retry] max_attempts must be a positive integer", where(config)));
    s.retry.max_attempts = static_cast<int>(*v);
  }
  if (auto v = number(retry, "base_delay_s", "llm.retry", config)) s.retry.base_delay = seconds_to_ms(*v);
  if (auto v = number(retry, "max_delay_s", "llm.retry", config)) s.retry.max_delay = seconds_to_ms(*v);
  if (auto v = number(retry, "max_total_s", "llm.retry", config)) s.retry.max_total = seconds_to_ms(*v);

  if (auto v = number(table_at(config.table, "llm.exec", config), "timeout_s", "llm.exec", config))
    s.exec_timeout = seconds_to_ms(*v);
  const toml::table* manual = table_at(config.table, "llm.manual", config);
  if (auto v = number(manual, "poll_interval_s", "llm.manual", config))
    s.manual_poll = std::max(milliseconds(10), seconds_to_ms(*v));
  if (auto v = number(manual, "timeout_s", "llm.manual", config)) s.manual_timeout = seconds_to_ms(*v);

  if (const toml::table* keys = table_at(config.table, "llm.api_keys", config)) {
    for (const auto& [kind, node] : *keys) {
      auto v = node.value<std::string>();
      if (!v || !node.is_string())
        throw InputError(fmt::format("{}: [llm.api_keys] {} must be a string", where(config), kind.str()));
      s.api_keys[std::string(kind.str())] = *v;
    }
  }

  if (const toml::table* prices = table_at(config.table, "llm.prices", config)) {
    for (const auto& [spec, node] : *prices) {
      const toml::table* entry = node.as_table();
      std::string section = fmt::format("llm.prices.\"{}\"", spec.str());
      if (!entry) throw InputError(fmt::format("{}: [{}] must be a table", where(config), section));
      Price price;
      auto in = number(entry, "input_per_mtok", section, config);
      auto out = number(entry, "output_per_mtok", section, config);
      if (!in || !out)
        throw InputError(fmt::format("{}: [{}] needs input_per_mtok and output_per_mtok (USD per million tokens)",
                                     where(config), section));
      price.input_per_mtok = *in;
      price.output_per_mtok = *out;
      s.prices.set(std::string(spec.str()), price);
    }
  }
  return s;
}

}  // namespace kforge::llm
