// Server-sent events, the framing both providers use when streaming: blank-line separated
// events made of "event:" and "data:" lines (data lines joined with '\n').
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge::llm {

struct SseEvent {
  std::string event;  // empty when the server named none
  std::string data;
};

// Parses a complete (or cut) stream. A trailing event without its blank line is still
// returned, so callers decide about truncation from the content (a missing [DONE] or
// message_stop), not from the framing.
std::vector<SseEvent> parse_sse(std::string_view stream);

}  // namespace kforge::llm
