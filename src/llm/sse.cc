// SSE parsing (see sse.h); follows the WHATWG event-stream rules that matter here.
#include "llm/sse.h"

namespace kforge::llm {

std::vector<SseEvent> parse_sse(std::string_view stream) {
  std::vector<SseEvent> events;
  SseEvent current;
  bool has_data = false;
  auto flush = [&] {
    if (has_data || !current.event.empty()) events.push_back(current);
    current = {};
    has_data = false;
  };
  std::size_t pos = 0;
  while (pos < stream.size()) {
    std::size_t end = stream.find('\n', pos);
    std::string_view line = stream.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? stream.size() : end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      flush();
      continue;
    }
    if (line.front() == ':') continue;  // comment / keep-alive
    std::string_view field = line, value;
    if (auto colon = line.find(':'); colon != std::string_view::npos) {
      field = line.substr(0, colon);
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "event") {
      current.event = std::string(value);
    } else if (field == "data") {
      if (has_data) current.data += '\n';
      current.data += value;
      has_data = true;
    }
  }
  flush();
  return events;
}

}  // namespace kforge::llm
