// Provider construction (see provider_factory.h).
#include "llm/provider_factory.h"

#include <cstdlib>

#include <fmt/format.h>

#include "llm/anthropic_provider.h"
#include "llm/exec_provider.h"
#include "llm/manual_provider.h"
#include "llm/metering_provider.h"
#include "llm/openai_provider.h"
#include "llm/recording_provider.h"
#include "llm/replay_provider.h"
#include "llm/secrets.h"
#include "util/errors.h"

namespace kforge::llm {

namespace {

constexpr std::string_view kKinds = "openai, anthropic, exec, manual, replay";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string resolve_base_url(const ProviderOptions& options, const LlmSettings& settings, const std::string& kind,
                             const char* env_name, std::string_view fallback) {
  if (!options.base_url.empty()) return options.base_url;
  if (std::string v = env(env_name); !v.empty()) return v;
  if (auto it = settings.base_urls.find(kind); it != settings.base_urls.end() && !it->second.empty()) return it->second;
  if (!settings.base_url.empty()) return settings.base_url;
  return std::string(fallback);
}

std::string resolve_key(const LlmSettings& settings, const std::string& kind, const char* env_name) {
  if (std::string v = env(env_name); !v.empty()) return v;
  if (auto it = settings.api_keys.find(kind); it != settings.api_keys.end()) return it->second;
  return {};
}

HttpProviderOptions http_options(const ProviderSpec& spec, const LlmSettings& settings, const CancelFlag* cancel) {
  HttpProviderOptions o;
  o.model = spec.argument;
  o.timeouts = settings.timeouts;
  o.retry = settings.retry;
  o.default_max_tokens = settings.max_tokens;
  o.temperature = settings.temperature;
  o.stream = settings.stream;
  o.cancel = cancel;
  return o;
}

std::unique_ptr<Provider> make_backend(const ProviderSpec& spec, const ProviderOptions& options,
                                       const LlmSettings& settings, const CancelFlag* cancel) {
  if (spec.kind == "openai") {
    HttpProviderOptions o = http_options(spec, settings, cancel);
    o.base_url = resolve_base_url(options, settings, "openai", "OPENAI_BASE_URL", kOpenAIDefaultBaseUrl);
    o.api_key = resolve_key(settings, "openai", "OPENAI_API_KEY");
    if (o.api_key.empty() && o.base_url.find("api.openai.com") != std::string::npos)
      throw InputError(
          "openai: no API key: set OPENAI_API_KEY, or put it in kforge.toml as [llm.api_keys] openai = \"...\" "
          "(chmod 600 the file); local OpenAI-compatible servers need --llm-base-url instead");
    return std::make_unique<OpenAIProvider>(std::move(o), settings.openai_max_tokens_field);
  }
  if (spec.kind == "anthropic") {
    HttpProviderOptions o = http_options(spec, settings, cancel);
    o.base_url = resolve_base_url(options, settings, "anthropic", "ANTHROPIC_BASE_URL", kAnthropicDefaultBaseUrl);
    o.api_key = resolve_key(settings, "anthropic", "ANTHROPIC_API_KEY");
    if (o.api_key.empty() && o.base_url.find("api.anthropic.com") != std::string::npos)
      throw InputError(
          "anthropic: no API key: set ANTHROPIC_API_KEY, or put it in kforge.toml as [llm.api_keys] anthropic = "
          "\"...\" (chmod 600 the file)");
    return std::make_unique<AnthropicProvider>(std::move(o));
  }
  if (!options.base_url.empty())
    throw InputError(fmt::format("--llm-base-url applies to openai: and anthropic: only, not {}:", spec.kind));
  if (spec.kind == "exec") {
    ExecProviderOptions o;
    o.command = spec.argument;
    o.timeout = settings.exec_timeout;
    o.retry = settings.retry;
    o.default_max_tokens = settings.max_tokens;
    o.temperature = settings.temperature;
    o.cancel = cancel;
    return std::make_unique<ExecProvider>(std::move(o));
  }
  if (spec.kind == "manual") {
    ManualProviderOptions o;
    o.dir = spec.argument;
    o.poll_interval = settings.manual_poll;
    o.timeout = settings.manual_timeout;
    o.default_max_tokens = settings.max_tokens;
    o.cancel = cancel;
    o.notify = options.notify;
    return std::make_unique<ManualProvider>(std::move(o));
  }
  if (spec.kind == "replay") return std::make_unique<ReplayProvider>(spec.argument, options.replay_by_position);
  throw InputError(fmt::format("unknown provider kind '{}' (expected one of: {})", spec.kind, kKinds));
}

}  // namespace

ProviderSpec parse_provider_spec(std::string_view spec) {
  auto colon = spec.find(':');
  if (colon == std::string_view::npos)
    throw InputError(fmt::format("provider '{}' is not KIND:ARGUMENT (e.g. openai:gpt-4o, anthropic:MODEL, "
                                 "exec:COMMAND, manual:DIR, replay:FILE)",
                                 spec));
  ProviderSpec out{std::string(spec.substr(0, colon)), std::string(spec.substr(colon + 1))};
  if (out.kind != "openai" && out.kind != "anthropic" && out.kind != "exec" && out.kind != "manual" &&
      out.kind != "replay")
    throw InputError(fmt::format("unknown provider kind '{}' in '{}' (expected one of: {})", out.kind, spec, kKinds));
  if (out.argument.empty())
    throw InputError(fmt::format("provider '{}' lacks its {} after the colon", spec,
                                 out.kind == "exec"     ? "command"
                                 : out.kind == "manual" ? "directory"
                                 : out.kind == "replay" ? "transcript file"
                                                        : "model name"));
  return out;
}

std::unique_ptr<Provider> make_provider(const ProviderOptions& options, const Config& config) {
  return make_provider(options, load_llm_settings(config));
}

std::unique_ptr<Provider> make_provider(const ProviderOptions& options, const LlmSettings& settings) {
  register_environment_secrets();
  for (const auto& [kind, key] : settings.api_keys) register_secret(key);

  const std::string spec_text = !options.spec.empty() ? options.spec : settings.provider;
  if (spec_text.empty())
    throw InputError("no LLM provider: pass --llm KIND:MODEL (e.g. openai:gpt-4o) or set [llm] provider in kforge.toml");
  const ProviderSpec spec = parse_provider_spec(spec_text);
  if (options.replay_by_position && spec.kind != "replay")
    throw InputError("--replay-by-position applies to replay: providers only");

  const CancelFlag* cancel = options.cancel ? options.cancel : &global_cancel_flag();
  std::unique_ptr<Provider> provider = make_backend(spec, options, settings, cancel);
  if (!options.record_path.empty())
    provider = std::make_unique<RecordingProvider>(std::move(provider), options.record_path);
  return std::make_unique<MeteringProvider>(std::move(provider), settings.prices, options.meter);
}

}  // namespace kforge::llm
