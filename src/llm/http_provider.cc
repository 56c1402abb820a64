// Shared request cycle of the HTTP providers (see http_provider.h).
#include "llm/http_provider.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "llm/errors.h"

namespace kforge::llm {

std::string trim_base_url(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

HttpProvider::HttpProvider(std::string kind, HttpProviderOptions options)
    : kind_(std::move(kind)), options_(std::move(options)) {
  options_.base_url = trim_base_url(options_.base_url);
}

int HttpProvider::effective_max_tokens(const Request& request) const {
  return request.max_tokens > 0 ? request.max_tokens : options_.default_max_tokens;
}

std::optional<double> HttpProvider::effective_temperature(const Request& request) const {
  return request.temperature ? request.temperature : options_.temperature;
}

Response HttpProvider::complete(const Request& request) {
  const auto start = std::chrono::steady_clock::now();
  HttpRequest http;
  http.url = endpoint_url();
  http.headers = headers();
  http.body = body(request);
  const HttpErrorContext context = error_context();

  Response response = run_with_retries(options_.retry, options_.cancel, name(), [&](AttemptBudget left) {
    HttpTimeouts timeouts = options_.timeouts;
    timeouts.request = std::min(timeouts.request, left);
    HttpResponse reply;
    try {
      reply = http_post(http, timeouts, options_.cancel);
    } catch (const LlmError& e) {
      if (e.kind() == ErrorKind::kCancelled) throw;
      throw LlmError(e.kind(), fmt::format("{}: {}", name(), e.what()), e.retryable(), e.retry_after(),
                     e.http_status());
    }
    if (reply.status < 200 || reply.status >= 300) throw http_error(reply, context);
    return parse(reply);
  });
  response.latency =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  if (response.model.empty()) response.model = options_.model;
  response.provider = name();
  return response;
}

}  // namespace kforge::llm
