// Failures of an LLM call, classified so that the retry loop knows what to retry and the
// CLI knows whether the user has something to fix. Every message is passed through
// redact_secrets() on construction, so no key can reach a log or terminal through it.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kforge::llm {

enum class ErrorKind {
  kAuth,            // 401: missing or wrong API key
  kPermission,      // 403: the key may not use this model or endpoint
  kBadRequest,      // 400/413/422: the request itself is wrong
  kNotFound,        // 404: wrong base URL or model name
  kQuota,           // 429 that waiting will not fix: quota or spend limit exhausted
  kRateLimited,     // 429: too many requests, retried
  kServer,          // 5xx, 529, or an error event in a stream, retried
  kNetwork,         // connection refused, reset or cut, retried
  kTimeout,         // connect/read/request timeout, retried
  kMalformed,       // unparsable or truncated body, retried
  kCancelled,       // Ctrl-C
  kCommandFailed,   // exec: the command failed
  kReplayMismatch,  // replay: no recorded reply for this request
  kConfig,          // unusable base URL or similar
};

std::string_view error_kind_name(ErrorKind kind);

// True for kinds where retrying cannot help and the user must change something
// (key, model, base URL, request, transcript, configuration).
bool is_user_error(ErrorKind kind);

class LlmError : public std::runtime_error {
 public:
  LlmError(ErrorKind kind, std::string_view message, bool retryable = false,
           std::optional<std::chrono::milliseconds> retry_after = std::nullopt, int http_status = 0);

  ErrorKind kind() const { return kind_; }
  bool retryable() const { return retryable_; }
  // Wait the server asked for (Retry-After), if any.
  std::optional<std::chrono::milliseconds> retry_after() const { return retry_after_; }
  int http_status() const { return http_status_; }

 private:
  ErrorKind kind_;
  bool retryable_;
  std::optional<std::chrono::milliseconds> retry_after_;
  int http_status_;
};

}  // namespace kforge::llm
