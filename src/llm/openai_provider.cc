// OpenAI Chat Completions client (see openai_provider.h). Field names follow the public
// API reference: messages[].content as a string or as parts ({"type":"text"} and
// {"type":"image_url","image_url":{"url":"data:..."}}), choices[0].message.content,
// choices[0].finish_reason, usage.prompt_tokens / usage.completion_tokens, and for
// streams choices[0].delta.content with stream_options.include_usage.
#include "llm/openai_provider.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llm/errors.h"
#include "llm/sse.h"

namespace kforge::llm {

using nlohmann::json;

namespace {

FinishReason map_finish(std::string_view raw) {
  if (raw == "stop") return FinishReason::kStop;
  if (raw == "length") return FinishReason::kLength;
  if (raw == "content_filter") return FinishReason::kContentFilter;
  if (raw == "tool_calls" || raw == "function_call") return FinishReason::kToolUse;
  if (raw.empty()) return FinishReason::kUnknown;
  return FinishReason::kOther;
}

json content_json(const Message& message) {
  if (!message.has_images()) return message.joined_text();
  json parts = json::array();
  for (const auto& part : message.content) {
    if (part.type == ContentPart::Type::kText) {
      parts.push_back({{"type", "text"}, {"text", part.text}});
    } else {
      parts.push_back({{"type", "image_url"},
                       {"image_url", {{"url", fmt::format("data:{};base64,{}", part.media_type, part.data_base64)}}}});
    }
  }
  return parts;
}

[[noreturn]] void malformed(std::string_view what) {
  throw LlmError(ErrorKind::kMalformed, fmt::format("openai: malformed reply: {}", what), true);
}

void check_in_band_error(const json& j) {
  if (j.is_object() && j.contains("error") && !j["error"].is_null()) {
    const json& e = j["error"];
    std::string message = e.is_object() && e.contains("message") && e["message"].is_string()
                              ? e["message"].get<std::string>()
                              : e.dump();
    throw LlmError(ErrorKind::kServer, fmt::format("openai: the server reported an error: {}", message), true);
  }
}

void read_usage(const json& j, Response& response) {
  if (!j.contains("usage") || !j["usage"].is_object()) return;
  const json& u = j["usage"];
  if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
    response.usage.input_tokens = u["prompt_tokens"].get<std::int64_t>();
  if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
    response.usage.output_tokens = u["completion_tokens"].get<std::int64_t>();
}

std::string text_of(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return {};
  std::string out;
  if (content.is_array())
    for (const auto& part : content)
      if (part.is_object() && part.contains("text") && part["text"].is_string()) out += part["text"].get<std::string>();
  return out;
}

}  // namespace

OpenAIProvider::OpenAIProvider(HttpProviderOptions options, std::string max_tokens_field)
    : HttpProvider("openai", std::move(options)), max_tokens_field_(std::move(max_tokens_field)) {
  if (max_tokens_field_.empty())
    max_tokens_field_ = this->options().base_url.find("api.openai.com") != std::string::npos
                            ? "max_completion_tokens"
                            : "max_tokens";
}

std::string OpenAIProvider::endpoint_url() const { return options().base_url + "/chat/completions"; }

HttpHeaders OpenAIProvider::headers() const {
  HttpHeaders h = {{"Content-Type", "application/json"}};
  if (!options().api_key.empty()) h.emplace_back("Authorization", "Bearer " + options().api_key);
  if (options().stream) h.emplace_back("Accept", "text/event-stream");
  return h;
}

json OpenAIProvider::request_body(const Request& request) const {
  json messages = json::array();
  for (const auto& m : request.messages)
    messages.push_back({{"role", role_name(m.role)}, {"content", content_json(m)}});
  json body = {{"model", options().model}, {"messages", std::move(messages)}};
  body[max_tokens_field_] = effective_max_tokens(request);
  if (auto t = effective_temperature(request)) body["temperature"] = *t;
  if (options().stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  return body;
}

std::string OpenAIProvider::body(const Request& request) const { return request_body(request).dump(); }

Response OpenAIProvider::parse(const HttpResponse& response) const {
  auto content_type = response.header("content-type").value_or("");
  if (options().stream && (content_type.find("text/event-stream") != std::string::npos ||
                           response.body.starts_with("data:")))
    return parse_openai_stream(response.body);
  return parse_openai_completion(response.body);
}

HttpErrorContext OpenAIProvider::error_context() const {
  return {name(), endpoint_url(), "OPENAI_API_KEY", "[llm.api_keys] openai"};
}

Response parse_openai_completion(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) {
    malformed(body.empty() ? std::string("empty body")
                           : fmt::format("not JSON ({} bytes; cut connection or a proxy's error page?)", body.size()));
  }
  check_in_band_error(j);
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    malformed("no choices[]");
  const json& choice = j["choices"][0];
  if (!choice.is_object() || !choice.contains("message") || !choice["message"].is_object())
    malformed("choices[0].message missing");
  Response response;
  response.text = text_of(choice["message"].value("content", json()));
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
    response.raw_finish_reason = choice["finish_reason"].get<std::string>();
  response.finish_reason = map_finish(response.raw_finish_reason);
  read_usage(j, response);
  if (j.contains("model") && j["model"].is_string()) response.model = j["model"].get<std::string>();
  return response;
}

Response parse_openai_stream(std::string_view body) {
  Response response;
  bool done = false;
  bool any_chunk = false;
  for (const auto& event : parse_sse(body)) {
    if (event.data == "[DONE]") {
      done = true;
      break;
    }
    json chunk = json::parse(event.data, nullptr, false);
    if (chunk.is_discarded()) malformed("a stream chunk is not JSON");
    check_in_band_error(chunk);
    any_chunk = true;
    if (chunk.contains("model") && chunk["model"].is_string()) response.model = chunk["model"].get<std::string>();
    read_usage(chunk, response);
    if (!chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    if (choice.contains("delta") && choice["delta"].is_object() && choice["delta"].contains("content"))
      response.text += text_of(choice["delta"]["content"]);
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      response.raw_finish_reason = choice["finish_reason"].get<std::string>();
  }
  if (!any_chunk) malformed("the stream carried no chunks");
  if (!done && response.raw_finish_reason.empty()) malformed("the stream ended before [DONE] (connection cut?)");
  response.finish_reason = map_finish(response.raw_finish_reason);
  return response;
}

}  // namespace kforge::llm
