// `anthropic:MODEL`: the Anthropic Messages API (POST {base}/v1/messages).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "llm/http_provider.h"

namespace kforge::llm {

inline constexpr std::string_view kAnthropicDefaultBaseUrl = "https://api.anthropic.com";
inline constexpr std::string_view kAnthropicVersion = "2023-06-01";

class AnthropicProvider : public HttpProvider {
 public:
  explicit AnthropicProvider(HttpProviderOptions options);

  // Exposed for tests.
  nlohmann::json request_body(const Request& request) const;

 protected:
  std::string endpoint_url() const override;
  HttpHeaders headers() const override;
  std::string body(const Request& request) const override;
  Response parse(const HttpResponse& response) const override;
  HttpErrorContext error_context() const override;
};

// Parses a complete (non-streamed) message body.
Response parse_anthropic_message(std::string_view body);
// Parses a streamed reply (message_start ... message_stop events).
Response parse_anthropic_stream(std::string_view body);

}  // namespace kforge::llm
