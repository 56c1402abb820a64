// Transcript encoding and decoding (see transcript.h).
#include "llm/transcript.h"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llm/normalize.h"
#include "util/errors.h"

namespace kforge::llm {

using nlohmann::ordered_json;

std::string encode_transcript_entry(const TranscriptEntry& entry) {
  ordered_json line;
  line["v"] = kTranscriptVersion;
  line["seq"] = entry.seq;
  line["key"] = entry.key;
  line["provider"] = entry.response.provider;
  line["request"] = ordered_json::parse(request_to_json(entry.request).dump());
  line["response"] = ordered_json::parse(response_to_json(entry.response).dump());
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<TranscriptEntry> read_transcript(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("replay: cannot read transcript {}", path.string()));
  std::vector<TranscriptEntry> entries;
  std::string text;
  int line_number = 0;
  while (std::getline(in, text)) {
    ++line_number;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw InputError(fmt::format("{}:{}: not a JSON object (truncated transcript?)", path.string(), line_number));
    try {
      if (j.value("v", 0) != kTranscriptVersion)
        throw InputError(fmt::format("unsupported transcript version {} (this kforge reads {})", j.value("v", 0),
                                     kTranscriptVersion));
      if (!j.contains("request") || !j.contains("response")) throw InputError("needs 'request' and 'response'");
      TranscriptEntry entry;
      entry.seq = static_cast<int>(entries.size());
      entry.request = request_from_json(j["request"]);
      entry.response = response_from_json(j["response"]);
      entry.key = request_key(entry.request);  // recomputed: the masking rules may have improved
      entries.push_back(std::move(entry));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}:{}: {}", path.string(), line_number, e.what()));
    }
  }
  return entries;
}

}  // namespace kforge::llm
