// The reply format shared by exec: (stdout) and manual: (reply-NNNN.json / .md): either a
// JSON object {"text": ..., "finish_reason"?, "usage"?: {"input_tokens", "output_tokens"},
// "model"?} or {"error": "message"}, or plain text that is the reply as it is.
#pragma once

#include <string_view>

#include "llm/provider.h"

namespace kforge::llm {

// Parses `output`. When it is a JSON object with a string "text" it is read as the JSON
// form; with "error" it throws LlmError(kCommandFailed) carrying the message; anything
// else is plain text. `source` names where it came from, for messages.
Response parse_reply(std::string_view output, std::string_view source);

// Parses the JSON form only (throws LlmError(kMalformed) naming `source` otherwise).
Response parse_reply_json(std::string_view output, std::string_view source);

}  // namespace kforge::llm
