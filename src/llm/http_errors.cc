// Classification of HTTP error replies (see http_errors.h).
#include "llm/http_errors.h"

#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kforge::llm {

using nlohmann::json;

namespace {

std::string shorten(std::string_view text, std::size_t limit = 300) {
  std::string out;
  for (char c : text.substr(0, limit)) out += (c == '\n' || c == '\r') ? ' ' : c;
  if (text.size() > limit) out += "...";
  return out;
}

bool mentions(std::string_view body, std::string_view word) { return body.find(word) != std::string_view::npos; }

}  // namespace

std::string server_error_message(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    if (j.contains("error")) {
      const json& e = j["error"];
      if (e.is_string()) return shorten(e.get<std::string>());
      if (e.is_object() && e.contains("message") && e["message"].is_string())
        return shorten(e["message"].get<std::string>());
    }
    if (j.contains("message") && j["message"].is_string()) return shorten(j["message"].get<std::string>());
    if (j.contains("detail")) return shorten(j["detail"].is_string() ? j["detail"].get<std::string>() : j["detail"].dump());
  }
  if (body.empty()) return "(empty body)";
  return shorten(body);
}

std::optional<std::chrono::milliseconds> retry_after(const HttpResponse& response) {
  using std::chrono::milliseconds;
  if (auto v = response.header("retry-after-ms")) {
    try {
      double value = std::stod(*v);
      if (value >= 0) return milliseconds(static_cast<std::int64_t>(value));
    } catch (const std::exception&) {
    }
  }
  auto v = response.header("retry-after");
  if (!v) return std::nullopt;
  try {
    std::size_t used = 0;
    double seconds = std::stod(*v, &used);
    if (used == v->size() && seconds >= 0) return milliseconds(static_cast<std::int64_t>(seconds * 1000));
  } catch (const std::exception&) {
  }
  std::tm tm{};
  if (strptime(v->c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm)) {
    std::time_t when = timegm(&tm);
    std::time_t now = std::time(nullptr);
    return milliseconds(when > now ? (when - now) * 1000 : 0);
  }
  return std::nullopt;
}

LlmError http_error(const HttpResponse& response, const HttpErrorContext& context) {
  const long status = response.status;
  const std::string detail = server_error_message(response.body);
  const int code = static_cast<int>(status);
  const std::string head = fmt::format("{}: HTTP {} from {}: {}", context.provider, status, context.url, detail);
  switch (status) {
    case 400:
    case 413:
    case 422:
      return LlmError(ErrorKind::kBadRequest,
                      fmt::format("{}. The server rejected the request: check the model name, max_tokens "
                                  "([llm] max_tokens) and the prompt size.",
                                  head),
                      false, std::nullopt, code);
    case 401:
      return LlmError(ErrorKind::kAuth,
                      fmt::format("{}. Authentication failed: check {} (or {} in kforge.toml).", head,
                                  context.key_env_var, context.key_config),
                      false, std::nullopt, code);
    case 403:
      return LlmError(ErrorKind::kPermission,
                      fmt::format("{}. The key is not allowed to use this model or endpoint: check the "
                                  "account's access and the model name.",
                                  head),
                      false, std::nullopt, code);
    case 404:
      return LlmError(ErrorKind::kNotFound,
                      fmt::format("{}. Check the model name and the base URL (--llm-base-url; OpenAI-compatible "
                                  "servers usually end in /v1).",
                                  head),
                      false, std::nullopt, code);
    default: break;
  }
  if (status == 429) {
    if (mentions(response.body, "insufficient_quota") || mentions(response.body, "spend_limit") ||
        mentions(response.body, "billing")) {
      return LlmError(ErrorKind::kQuota,
                      fmt::format("{}. The account's quota or spend limit is exhausted: waiting will not help; "
                                  "check billing.",
                                  head),
                      false, std::nullopt, code);
    }
    return LlmError(ErrorKind::kRateLimited, fmt::format("{} (rate limited)", head), true, retry_after(response),
                    code);
  }
  if (status == 408 || status == 409 || status == 425 || status >= 500)
    return LlmError(ErrorKind::kServer, head, true, retry_after(response), code);
  return LlmError(ErrorKind::kBadRequest, head, false, std::nullopt, code);
}

}  // namespace kforge::llm
