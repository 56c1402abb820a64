// Value helpers and the canonical JSON (de)serialisation of the provider types.
#include "llm/provider.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/errors.h"

namespace kforge::llm {

using nlohmann::json;

std::string_view role_name(Role role) {
  switch (role) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
  }
  return "user";
}

Role parse_role(std::string_view name) {
  if (name == "system") return Role::kSystem;
  if (name == "user") return Role::kUser;
  if (name == "assistant") return Role::kAssistant;
  throw InputError(fmt::format("unknown message role '{}' (expected system, user or assistant)", name));
}

ContentPart ContentPart::text_part(std::string text) {
  ContentPart part;
  part.type = Type::kText;
  part.text = std::move(text);
  return part;
}

ContentPart ContentPart::image_part(std::string media_type, std::string data_base64) {
  ContentPart part;
  part.type = Type::kImage;
  part.media_type = std::move(media_type);
  part.data_base64 = std::move(data_base64);
  return part;
}

Message Message::text(Role role, std::string text) {
  Message message;
  message.role = role;
  message.content.push_back(ContentPart::text_part(std::move(text)));
  return message;
}

std::string Message::joined_text() const {
  std::string out;
  for (const auto& part : content)
    if (part.type == ContentPart::Type::kText) out += part.text;
  return out;
}

bool Message::has_images() const {
  for (const auto& part : content)
    if (part.type == ContentPart::Type::kImage) return true;
  return false;
}

Usage& Usage::operator+=(const Usage& other) {
  input_tokens += other.input_tokens;
  output_tokens += other.output_tokens;
  return *this;
}

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kContentFilter: return "content_filter";
    case FinishReason::kToolUse: return "tool_use";
    case FinishReason::kOther: return "other";
    case FinishReason::kUnknown: return "unknown";
  }
  return "unknown";
}

FinishReason parse_finish_reason(std::string_view name) {
  for (auto r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kContentFilter,
                 FinishReason::kToolUse, FinishReason::kOther, FinishReason::kUnknown})
    if (finish_reason_name(r) == name) return r;
  return FinishReason::kOther;
}

namespace {

const json& require(const json& object, const char* key, const char* where) {
  if (!object.is_object() || !object.contains(key))
    throw InputError(fmt::format("{}: missing field '{}'", where, key));
  return object.at(key);
}

std::string require_string(const json& object, const char* key, const char* where) {
  const json& v = require(object, key, where);
  if (!v.is_string()) throw InputError(fmt::format("{}: field '{}' must be a string", where, key));
  return v.get<std::string>();
}

std::int64_t optional_int(const json& object, const char* key, const char* where) {
  if (!object.contains(key) || object.at(key).is_null()) return 0;
  const json& v = object.at(key);
  if (!v.is_number_integer()) throw InputError(fmt::format("{}: field '{}' must be an integer", where, key));
  return v.get<std::int64_t>();
}

}  // namespace

Request as_sent(Request request) {
  for (auto& message : request.messages) message.match_text.clear();
  return request;
}

json request_to_json(const Request& request) {
  json messages = json::array();
  for (const auto& message : request.messages) {
    json content = json::array();
    for (const auto& part : message.content) {
      if (part.type == ContentPart::Type::kText) {
        content.push_back({{"type", "text"}, {"text", part.text}});
      } else {
        content.push_back(
            {{"type", "image"}, {"media_type", part.media_type}, {"data", part.data_base64}});
      }
    }
    json m = {{"role", role_name(message.role)}, {"content", std::move(content)}};
    if (!message.match_text.empty()) m["match_text"] = message.match_text;
    messages.push_back(std::move(m));
  }
  json out = {{"messages", std::move(messages)}, {"max_tokens", request.max_tokens}};
  if (request.temperature) out["temperature"] = *request.temperature;
  return out;
}

Request request_from_json(const json& in) {
  constexpr const char* where = "request";
  Request request;
  const json& messages = require(in, "messages", where);
  if (!messages.is_array()) throw InputError("request: 'messages' must be an array");
  for (const auto& m : messages) {
    Message message;
    message.role = parse_role(require_string(m, "role", "request message"));
    const json& content = require(m, "content", "request message");
    if (content.is_string()) {
      message.content.push_back(ContentPart::text_part(content.get<std::string>()));
    } else if (content.is_array()) {
      for (const auto& p : content) {
        std::string type = require_string(p, "type", "content part");
        if (type == "text") {
          message.content.push_back(ContentPart::text_part(require_string(p, "text", "text part")));
        } else if (type == "image") {
          message.content.push_back(ContentPart::image_part(
              require_string(p, "media_type", "image part"), require_string(p, "data", "image part")));
        } else {
          throw InputError(fmt::format("content part: unknown type '{}' (expected text or image)", type));
        }
      }
    } else {
      throw InputError("request message: 'content' must be a string or an array of parts");
    }
    if (m.contains("match_text")) message.match_text = require_string(m, "match_text", "request message");
    request.messages.push_back(std::move(message));
  }
  request.max_tokens = static_cast<int>(optional_int(in, "max_tokens", where));
  if (in.contains("temperature") && !in.at("temperature").is_null()) {
    if (!in.at("temperature").is_number()) throw InputError("request: 'temperature' must be a number");
    request.temperature = in.at("temperature").get<double>();
  }
  return request;
}

json response_to_json(const Response& response) {
  return {{"text", response.text},
          {"finish_reason", finish_reason_name(response.finish_reason)},
          {"raw_finish_reason", response.raw_finish_reason},
          {"usage",
           {{"input_tokens", response.usage.input_tokens},
            {"output_tokens", response.usage.output_tokens}}},
          {"latency_ms", response.latency.count()},
          {"model", response.model},
          {"provider", response.provider},
          {"attempts", response.attempts}};
}

Response response_from_json(const json& in) {
  constexpr const char* where = "response";
  Response response;
  response.text = require_string(in, "text", where);
  if (in.contains("finish_reason") && in.at("finish_reason").is_string())
    response.finish_reason = parse_finish_reason(in.at("finish_reason").get<std::string>());
  if (in.contains("raw_finish_reason") && in.at("raw_finish_reason").is_string())
    response.raw_finish_reason = in.at("raw_finish_reason").get<std::string>();
  else
    response.raw_finish_reason = std::string(finish_reason_name(response.finish_reason));
  if (in.contains("usage") && in.at("usage").is_object()) {
    response.usage.input_tokens = optional_int(in.at("usage"), "input_tokens", "response usage");
    response.usage.output_tokens = optional_int(in.at("usage"), "output_tokens", "response usage");
  }
  response.latency = std::chrono::milliseconds(optional_int(in, "latency_ms", where));
  if (in.contains("model") && in.at("model").is_string()) response.model = in.at("model").get<std::string>();
  if (in.contains("provider") && in.at("provider").is_string())
    response.provider = in.at("provider").get<std::string>();
  if (std::int64_t attempts = optional_int(in, "attempts", where); attempts > 0)
    response.attempts = static_cast<int>(attempts);
  return response;
}

}  // namespace kforge::llm
