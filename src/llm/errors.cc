// LlmError (see errors.h).
#include "llm/errors.h"

#include "llm/secrets.h"

namespace kforge::llm {

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kAuth: return "authentication";
    case ErrorKind::kPermission: return "permission";
    case ErrorKind::kBadRequest: return "bad request";
    case ErrorKind::kNotFound: return "not found";
    case ErrorKind::kQuota: return "quota";
    case ErrorKind::kRateLimited: return "rate limited";
    case ErrorKind::kServer: return "server error";
    case ErrorKind::kNetwork: return "network";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kMalformed: return "malformed reply";
    case ErrorKind::kCancelled: return "cancelled";
    case ErrorKind::kCommandFailed: return "command failed";
    case ErrorKind::kReplayMismatch: return "replay mismatch";
    case ErrorKind::kConfig: return "configuration";
  }
  return "error";
}

bool is_user_error(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kAuth:
    case ErrorKind::kPermission:
    case ErrorKind::kBadRequest:
    case ErrorKind::kNotFound:
    case ErrorKind::kQuota:
    case ErrorKind::kReplayMismatch:
    case ErrorKind::kConfig:
      return true;
    default:
      return false;
  }
}

LlmError::LlmError(ErrorKind kind, std::string_view message, bool retryable,
                   std::optional<std::chrono::milliseconds> retry_after, int http_status)
    : std::runtime_error(redact_secrets(message)),
      kind_(kind),
      retryable_(retryable),
      retry_after_(retry_after),
      http_status_(http_status) {}

}  // namespace kforge::llm
