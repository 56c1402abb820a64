// Builds a ready-to-use Provider from what the user asked for (--llm KIND:MODEL,
// --llm-base-url, --record, --replay-by-position) and kforge.toml, so every command
// (`kforge llm ping`, `kforge run`) sets providers up the same way.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "config/config.h"
#include "llm/cancel.h"
#include "llm/provider.h"
#include "llm/settings.h"
#include "llm/usage.h"

namespace kforge::llm {

// KIND:ARGUMENT, split at the first colon ("openai:llama3:8b" -> openai, llama3:8b).
struct ProviderSpec {
  std::string kind;      // openai, anthropic, exec, manual, replay
  std::string argument;  // model, command, directory or file
};

// Throws InputError for a missing colon, an unknown kind or an empty argument.
ProviderSpec parse_provider_spec(std::string_view spec);

struct ProviderOptions {
  std::string spec;                    // --llm; empty: [llm] provider from kforge.toml
  std::string base_url;                // --llm-base-url; empty: $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL, then config
  std::filesystem::path record_path;   // --record; empty: no transcript
  bool replay_by_position = false;     // --replay-by-position (replay: only)
  const CancelFlag* cancel = nullptr;  // null: global_cancel_flag(), set by Ctrl-C
  std::shared_ptr<UsageMeter> meter;   // optional: accumulates the run's tokens, latency and cost
  std::function<void(const std::string&)> notify;  // manual: terminal messages; default stderr
};

// Reads the [llm] settings from `config` and builds the provider (see the overload).
std::unique_ptr<Provider> make_provider(const ProviderOptions& options, const Config& config);

// Builds the provider from already-parsed settings: the back end for the spec, wrapped in
// the recorder when record_path is set, then in the meter (prices and per-run totals).
// API keys: $OPENAI_API_KEY / $ANTHROPIC_API_KEY, else [llm.api_keys]. Throws InputError
// for a bad spec, a missing required key, or an unreadable transcript.
std::unique_ptr<Provider> make_provider(const ProviderOptions& options, const LlmSettings& settings);

}  // namespace kforge::llm
