// Turns a non-2xx HTTP reply from an LLM server into an LlmError with a message that says
// what to fix, and decides whether it is worth retrying (429, 408, 409, 5xx, 529) and how
// long the server asked us to wait (Retry-After, retry-after-ms).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "llm/errors.h"
#include "llm/http_client.h"

namespace kforge::llm {

struct HttpErrorContext {
  std::string provider;     // "openai:gpt-4o"
  std::string url;          // endpoint that was called
  std::string key_env_var;  // "OPENAI_API_KEY"
  std::string key_config;   // "[llm.api_keys] openai"
};

LlmError http_error(const HttpResponse& response, const HttpErrorContext& context);

// The human-readable message inside an error body: error.message (OpenAI, Anthropic),
// message (vLLM), error as a string (Ollama), detail (FastAPI); else the body's start.
std::string server_error_message(std::string_view body);

// Retry-After (seconds or an HTTP date) or retry-after-ms, if present and sensible.
std::optional<std::chrono::milliseconds> retry_after(const HttpResponse& response);

}  // namespace kforge::llm
