// A small libcurl wrapper for the HTTP providers: one POST with connect, read
// (inactivity) and whole-request timeouts, checking the cancellation flag while it waits.
// Transport failures become LlmError (kNetwork, kTimeout, kCancelled, kConfig); HTTP
// statuses are returned as they are and classified by http_errors.h.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llm/cancel.h"

namespace kforge::llm {

struct HttpTimeouts {
  std::chrono::milliseconds connect{std::chrono::seconds(10)};
  // Longest silence allowed once the request is sent: no byte from the server for this
  // long aborts the attempt. Without streaming the server is silent until the whole
  // reply is generated, so keep this above the slowest expected generation.
  std::chrono::milliseconds read{std::chrono::seconds(300)};
  // Upper bound for one attempt, end to end.
  std::chrono::milliseconds request{std::chrono::seconds(900)};
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string url;
  HttpHeaders headers;  // may carry keys: never log them
  std::string body;
};

struct HttpResponse {
  long status = 0;
  HttpHeaders headers;  // names lower-cased
  std::string body;

  // Last value of a header (name compared case-insensitively).
  std::optional<std::string> header(std::string_view name) const;
};

// POSTs `request`. Returns any HTTP status; throws LlmError on transport failure.
HttpResponse http_post(const HttpRequest& request, const HttpTimeouts& timeouts, const CancelFlag* cancel);

}  // namespace kforge::llm
