// Reply parsing for exec: and manual: (see reply_format.h).
#include "llm/reply_format.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llm/errors.h"

namespace kforge::llm {

using nlohmann::json;

namespace {

Response from_object(const json& j, std::string_view source) {
  if (j.contains("error") && !j["error"].is_null()) {
    std::string message = j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
    throw LlmError(ErrorKind::kCommandFailed, fmt::format("{} reported an error: {}", source, message));
  }
  if (!j.contains("text") || !j["text"].is_string())
    throw LlmError(ErrorKind::kMalformed, fmt::format("{}: the reply object needs a string \"text\" field", source));
  Response r;
  r.text = j["text"].get<std::string>();
  if (j.contains("finish_reason") && j["finish_reason"].is_string()) {
    r.raw_finish_reason = j["finish_reason"].get<std::string>();
    r.finish_reason = parse_finish_reason(r.raw_finish_reason);
  } else {
    r.finish_reason = FinishReason::kStop;
    r.raw_finish_reason = "stop";
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    if (u.contains("input_tokens") && u["input_tokens"].is_number_integer())
      r.usage.input_tokens = u["input_tokens"].get<std::int64_t>();
    if (u.contains("output_tokens") && u["output_tokens"].is_number_integer())
      r.usage.output_tokens = u["output_tokens"].get<std::int64_t>();
  }
  if (j.contains("model") && j["model"].is_string()) r.model = j["model"].get<std::string>();
  return r;
}

}  // namespace

Response parse_reply_json(std::string_view output, std::string_view source) {
  json j = json::parse(output, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw LlmError(ErrorKind::kMalformed, fmt::format("{}: not a JSON object", source));
  return from_object(j, source);
}

Response parse_reply(std::string_view output, std::string_view source) {
  auto first = output.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && output[first] == '{') {
    json j = json::parse(output, nullptr, false);
    if (!j.is_discarded() && j.is_object() && (j.contains("text") || j.contains("error"))) return from_object(j, source);
  }
  Response r;
  r.text = std::string(output);
  r.finish_reason = FinishReason::kStop;
  r.raw_finish_reason = "stop";
  return r;
}

}  // namespace kforge::llm
