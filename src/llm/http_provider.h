// What the two HTTP providers share: options, the retry loop around one POST, error
// classification and latency measurement. Subclasses supply only the wire format.
#pragma once

#include <optional>
#include <string>

#include "llm/cancel.h"
#include "llm/http_client.h"
#include "llm/http_errors.h"
#include "llm/provider.h"
#include "llm/retry.h"

namespace kforge::llm {

struct HttpProviderOptions {
  std::string model;
  std::string base_url;  // without the endpoint path; see each provider for its default
  std::string api_key;   // may be empty for local OpenAI-compatible servers
  HttpTimeouts timeouts;
  RetryPolicy retry;
  int default_max_tokens = 8192;
  std::optional<double> temperature;  // used when the request sets none
  bool stream = false;
  const CancelFlag* cancel = nullptr;
};

class HttpProvider : public Provider {
 public:
  Response complete(const Request& request) final;
  std::string name() const override { return kind_ + ":" + options_.model; }

 protected:
  HttpProvider(std::string kind, HttpProviderOptions options);

  virtual std::string endpoint_url() const = 0;
  virtual HttpHeaders headers() const = 0;
  virtual std::string body(const Request& request) const = 0;
  // Parses a 2xx body; throws LlmError (kMalformed, or kServer for an in-band error).
  virtual Response parse(const HttpResponse& response) const = 0;
  virtual HttpErrorContext error_context() const = 0;

  const HttpProviderOptions& options() const { return options_; }
  int effective_max_tokens(const Request& request) const;
  std::optional<double> effective_temperature(const Request& request) const;

 private:
  std::string kind_;
  HttpProviderOptions options_;
};

// Base URL without trailing slashes.
std::string trim_base_url(std::string url);

}  // namespace kforge::llm
