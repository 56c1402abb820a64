// The one interface every LLM back end implements, and the plain data it exchanges.
// Callers build a Request (chat messages with roles; text and image parts), call
// Provider::complete(), and get text plus token usage, finish reason and latency back.
// The JSON forms below are the canonical on-disk shapes used by exec:, manual:,
// --record and replay: (see docs/llm.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kforge::llm {

enum class Role { kSystem, kUser, kAssistant };

std::string_view role_name(Role role);  // "system", "user", "assistant"
Role parse_role(std::string_view name);  // throws InputError on anything else

struct ContentPart {
  enum class Type { kText, kImage };
  Type type = Type::kText;
  std::string text;         // kText
  std::string media_type;   // kImage: "image/png", "image/jpeg", "image/gif", "image/webp"
  std::string data_base64;  // kImage: the encoded image bytes

  static ContentPart text_part(std::string text);
  static ContentPart image_part(std::string media_type, std::string data_base64);
};

struct Message {
  Role role = Role::kUser;
  std::vector<ContentPart> content;
  // The text a replay matches this message on, when it differs from the text sent: the prompt
  // rendered with what this machine measured (timings, profile, flags) left out, so that a
  // transcript replays on another machine (docs/llm.md, "Normalised key"). Never sent to a model.
  std::string match_text;

  static Message text(Role role, std::string text);
  std::string joined_text() const;  // every text part, concatenated in order
  bool has_images() const;
};

struct Request {
  std::vector<Message> messages;
  int max_tokens = 0;                 // 0: the configured default ([llm] max_tokens)
  std::optional<double> temperature;  // unset: the server's default
};

// The request as a model gets it: without the messages' match texts.
Request as_sent(Request request);

struct Usage {
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;

  Usage& operator+=(const Usage& other);
};

enum class FinishReason { kStop, kLength, kContentFilter, kToolUse, kOther, kUnknown };

std::string_view finish_reason_name(FinishReason reason);  // "stop", "length", ...
FinishReason parse_finish_reason(std::string_view name);    // inverse; unknown names: kOther

struct Response {
  std::string text;
  Usage usage;
  FinishReason finish_reason = FinishReason::kUnknown;
  std::string raw_finish_reason;           // as the back end spelled it ("end_turn", "stop", ...)
  std::chrono::milliseconds latency{0};    // wall time of the call, retries and waits included
  std::string model;                       // model the back end reported, else the one requested
  std::string provider;                    // spec that produced the reply, e.g. "openai:gpt-4o"
  int attempts = 1;                        // HTTP attempts, retries included
  std::optional<double> cost_usd;          // set when [llm.prices] knows the provider
};

class Provider {
 public:
  virtual ~Provider() = default;

  // Sends one request and waits for the whole reply. Throws LlmError (src/llm/errors.h)
  // on failure once retries are spent, and InputError for unusable configuration.
  // Safe to call from several threads at once.
  virtual Response complete(const Request& request) = 0;

  // The spec this provider was built from, e.g. "openai:gpt-4o" or "replay:run.jsonl".
  virtual std::string name() const = 0;

  // A resumed run took this call's reply from its store instead of asking: a replay consumes the
  // entry it would have answered with (so the next request gets the next one, not the first), a
  // recording writes it (so a transcript of a resumed run replays whole). Others ignore it.
  virtual void answered_from_store(const Request& /*request*/, const Response& /*response*/) {}
};

// Canonical JSON forms. The *_from_json functions throw InputError naming the bad field.
nlohmann::json request_to_json(const Request& request);
Request request_from_json(const nlohmann::json& json);
nlohmann::json response_to_json(const Response& response);
Response response_from_json(const nlohmann::json& json);

}  // namespace kforge::llm
