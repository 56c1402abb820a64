// The JSONL transcript that --record writes and replay: reads: one JSON object per line,
// one line per completed call. Format in docs/llm.md ("Transcript format").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "llm/provider.h"

namespace kforge::llm {

inline constexpr int kTranscriptVersion = 1;

struct TranscriptEntry {
  int seq = 0;            // 0-based position in the transcript
  std::string key;        // request_key(request)
  Request request;
  Response response;
};

// One line, without the newline. Deterministic: the same entry always gives the same bytes.
std::string encode_transcript_entry(const TranscriptEntry& entry);

// Reads a whole transcript; throws InputError naming the file and line on any problem.
std::vector<TranscriptEntry> read_transcript(const std::filesystem::path& path);

}  // namespace kforge::llm
