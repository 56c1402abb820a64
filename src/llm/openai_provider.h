// `openai:MODEL`: the Chat Completions wire format (POST {base}/chat/completions), which
// OpenAI, vLLM, SGLang, llama.cpp's server, Ollama, LM Studio and OpenRouter all speak.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "llm/http_provider.h"

namespace kforge::llm {

inline constexpr std::string_view kOpenAIDefaultBaseUrl = "https://api.openai.com/v1";

class OpenAIProvider : public HttpProvider {
 public:
  // `max_tokens_field`: "max_tokens" or "max_completion_tokens"; empty picks
  // max_completion_tokens for api.openai.com (required by its reasoning models) and
  // max_tokens for every other server.
  explicit OpenAIProvider(HttpProviderOptions options, std::string max_tokens_field = {});

  // Exposed for tests.
  nlohmann::json request_body(const Request& request) const;

 protected:
  std::string endpoint_url() const override;
  HttpHeaders headers() const override;
  std::string body(const Request& request) const override;
  Response parse(const HttpResponse& response) const override;
  HttpErrorContext error_context() const override;

 private:
  std::string max_tokens_field_;
};

// Parses a complete (non-streamed) chat.completion body.
Response parse_openai_completion(std::string_view body);
// Parses a streamed reply (SSE chunks ending in "data: [DONE]").
Response parse_openai_stream(std::string_view body);

}  // namespace kforge::llm
