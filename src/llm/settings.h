// Everything the [llm] section of kforge.toml can say, parsed and validated once, with
// defaults for what it leaves out. See docs/llm.md ("Configuration") for the keys.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "config/config.h"
#include "llm/http_client.h"
#include "llm/retry.h"
#include "llm/usage.h"

namespace kforge::llm {

struct LlmSettings {
  std::string provider;                      // [llm] provider, e.g. "openai:gpt-4o"
  std::string base_url;                      // [llm] base_url (any HTTP provider)
  std::map<std::string, std::string> base_urls;  // [llm.openai] / [llm.anthropic] base_url
  int max_tokens = 8192;                     // [llm] max_tokens
  std::optional<double> temperature;         // [llm] temperature
  bool stream = false;                       // [llm] stream
  std::string openai_max_tokens_field;       // [llm.openai] max_tokens_field; empty: automatic
  HttpTimeouts timeouts;                     // [llm.timeouts]
  RetryPolicy retry;                         // [llm.retry]
  std::chrono::milliseconds exec_timeout{std::chrono::seconds(900)};     // [llm.exec] timeout_s
  std::chrono::milliseconds manual_poll{500};                            // [llm.manual] poll_interval_s
  std::chrono::milliseconds manual_timeout{0};                           // [llm.manual] timeout_s; 0: none
  std::map<std::string, std::string> api_keys;  // [llm.api_keys]: provider kind -> key
  PriceTable prices;                            // [llm.prices."KIND:MODEL"]
};

// Reads the [llm] section. Throws InputError for a wrong type or value, and when the file
// holds any secret (an [llm.api_keys] entry, or any *api_key / *token / *secret /
// *password key) while group or others can read it. Registers every secret found for
// redaction.
LlmSettings load_llm_settings(const Config& config);

}  // namespace kforge::llm
