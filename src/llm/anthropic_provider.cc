// Anthropic Messages API client (see anthropic_provider.h). Field names follow the public
// API reference: x-api-key and anthropic-version headers; a top-level "system" string;
// max_tokens required; content blocks {"type":"text"} and
// {"type":"image","source":{"type":"base64","media_type":...,"data":...}}; replies with
// content[].text, stop_reason and usage.input_tokens / usage.output_tokens; streams of
// message_start, content_block_delta (text_delta), message_delta, message_stop, ping and
// error events.
#include "llm/anthropic_provider.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llm/errors.h"
#include "llm/sse.h"

namespace kforge::llm {

using nlohmann::json;

namespace {

FinishReason map_stop(std::string_view raw) {
  if (raw == "end_turn" || raw == "stop_sequence") return FinishReason::kStop;
  if (raw == "max_tokens") return FinishReason::kLength;
  if (raw == "refusal") return FinishReason::kContentFilter;
  if (raw == "tool_use") return FinishReason::kToolUse;
  if (raw.empty()) return FinishReason::kUnknown;
  return FinishReason::kOther;
}

[[noreturn]] void malformed(std::string_view what) {
  throw LlmError(ErrorKind::kMalformed, fmt::format("anthropic: malformed reply: {}", what), true);
}

// {"type":"error","error":{"type":"overloaded_error","message":...}} inside a 200 or a stream.
void check_in_band_error(const json& j) {
  if (!j.is_object() || j.value("type", "") != "error") return;
  std::string type, message;
  if (j.contains("error") && j["error"].is_object()) {
    type = j["error"].value("type", "");
    message = j["error"].value("message", "");
  }
  const bool retryable = type == "overloaded_error" || type == "api_error" || type == "rate_limit_error";
  throw LlmError(retryable ? ErrorKind::kServer : ErrorKind::kBadRequest,
                 fmt::format("anthropic: the server reported {}: {}", type.empty() ? "an error" : type, message),
                 retryable);
}

std::int64_t int_field(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<std::int64_t>() : 0;
}

// Cache writes and reads are input tokens too.
void read_usage(const json& u, Response& response, bool input, bool output) {
  if (!u.is_object()) return;
  if (input && u.contains("input_tokens"))
    response.usage.input_tokens = int_field(u, "input_tokens") + int_field(u, "cache_creation_input_tokens") +
                                  int_field(u, "cache_read_input_tokens");
  if (output && u.contains("output_tokens")) response.usage.output_tokens = int_field(u, "output_tokens");
}

}  // namespace

AnthropicProvider::AnthropicProvider(HttpProviderOptions options) : HttpProvider("anthropic", std::move(options)) {}

std::string AnthropicProvider::endpoint_url() const { return options().base_url + "/v1/messages"; }

HttpHeaders AnthropicProvider::headers() const {
  HttpHeaders h = {{"Content-Type", "application/json"}, {"anthropic-version", std::string(kAnthropicVersion)}};
  if (!options().api_key.empty()) h.emplace_back("x-api-key", options().api_key);
  if (options().stream) h.emplace_back("Accept", "text/event-stream");
  return h;
}

json AnthropicProvider::request_body(const Request& request) const {
  std::string system;
  json messages = json::array();
  for (const auto& m : request.messages) {
    if (m.role == Role::kSystem) {
      if (!system.empty()) system += "\n\n";
      system += m.joined_text();
      continue;
    }
    json content;
    if (!m.has_images()) {
      content = m.joined_text();
    } else {
      content = json::array();
      for (const auto& part : m.content) {
        if (part.type == ContentPart::Type::kText) {
          content.push_back({{"type", "text"}, {"text", part.text}});
        } else {
          content.push_back({{"type", "image"},
                             {"source",
                              {{"type", "base64"}, {"media_type", part.media_type}, {"data", part.data_base64}}}});
        }
      }
    }
    messages.push_back({{"role", role_name(m.role)}, {"content", std::move(content)}});
  }
  json body = {{"model", options().model}, {"max_tokens", effective_max_tokens(request)}};
  if (!system.empty()) body["system"] = system;
  body["messages"] = std::move(messages);
  if (auto t = effective_temperature(request)) body["temperature"] = *t;
  if (options().stream) body["stream"] = true;
  return body;
}

std::string AnthropicProvider::body(const Request& request) const { return request_body(request).dump(); }

Response AnthropicProvider::parse(const HttpResponse& response) const {
  auto content_type = response.header("content-type").value_or("");
  if (options().stream && (content_type.find("text/event-stream") != std::string::npos ||
                           response.body.starts_with("event:") || response.body.starts_with("data:")))
    return parse_anthropic_stream(response.body);
  return parse_anthropic_message(response.body);
}

HttpErrorContext AnthropicProvider::error_context() const {
  return {name(), endpoint_url(), "ANTHROPIC_API_KEY", "[llm.api_keys] anthropic"};
}

Response parse_anthropic_message(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) {
    malformed(body.empty() ? std::string("empty body")
                           : fmt::format("not JSON ({} bytes; cut connection or a proxy's error page?)", body.size()));
  }
  check_in_band_error(j);
  if (!j.is_object() || !j.contains("content") || !j["content"].is_array()) malformed("no content[]");
  Response response;
  for (const auto& block : j["content"])
    if (block.is_object() && block.value("type", "") == "text" && block.contains("text") && block["text"].is_string())
      response.text += block["text"].get<std::string>();
  if (j.contains("stop_reason") && j["stop_reason"].is_string())
    response.raw_finish_reason = j["stop_reason"].get<std::string>();
  response.finish_reason = map_stop(response.raw_finish_reason);
  if (j.contains("usage")) read_usage(j["usage"], response, true, true);
  if (j.contains("model") && j["model"].is_string()) response.model = j["model"].get<std::string>();
  return response;
}

Response parse_anthropic_stream(std::string_view body) {
  Response response;
  bool started = false;
  bool stopped = false;
  for (const auto& event : parse_sse(body)) {
    if (event.data.empty()) continue;
    json j = json::parse(event.data, nullptr, false);
    if (j.is_discarded()) malformed(fmt::format("a '{}' event is not JSON", event.event));
    check_in_band_error(j);
    const std::string type = j.value("type", event.event);
    if (type == "message_start" && j.contains("message") && j["message"].is_object()) {
      started = true;
      const json& m = j["message"];
      if (m.contains("model") && m["model"].is_string()) response.model = m["model"].get<std::string>();
      if (m.contains("usage")) read_usage(m["usage"], response, true, true);
    } else if (type == "content_block_delta" && j.contains("delta") && j["delta"].is_object()) {
      const json& d = j["delta"];
      if (d.value("type", "") == "text_delta" && d.contains("text") && d["text"].is_string())
        response.text += d["text"].get<std::string>();
    } else if (type == "message_delta") {
      if (j.contains("delta") && j["delta"].is_object() && j["delta"].contains("stop_reason") &&
          j["delta"]["stop_reason"].is_string())
        response.raw_finish_reason = j["delta"]["stop_reason"].get<std::string>();
      if (j.contains("usage")) read_usage(j["usage"], response, j["usage"].contains("input_tokens"), true);
    } else if (type == "message_stop") {
      stopped = true;
    }
  }
  if (!started) malformed("the stream has no message_start event");
  if (!stopped) malformed("the stream ended before message_stop (connection cut?)");
  response.finish_reason = map_stop(response.raw_finish_reason);
  return response;
}

}  // namespace kforge::llm
