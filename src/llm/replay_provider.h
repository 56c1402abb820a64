// `replay:FILE`: answers from a transcript written by --record, without any model.
// By default each request is matched on its normalised key (normalize.h) against the
// entries not used yet, first match wins; with --replay-by-position the N-th request
// gets the N-th reply whatever it asked (a differing key is logged as a warning). A
// request with no match stops the run with LlmError(kReplayMismatch) showing the first
// difference against the next unused entry.
#pragma once

#include <filesystem>
#include <mutex>
#include <vector>

#include "llm/provider.h"
#include "llm/transcript.h"

namespace kforge::llm {

class ReplayProvider : public Provider {
 public:
  // Reads the whole transcript now; throws InputError if it is unreadable or malformed.
  ReplayProvider(const std::filesystem::path& path, bool by_position);

  Response complete(const Request& request) override;
  std::string name() const override { return "replay:" + path_.string(); }
  // Marks the entry this request would be answered with as used (by position: the next one; by
  // key: the first unused match, if any).
  void answered_from_store(const Request& request, const Response& response) override;

  std::size_t remaining() const;  // entries not used yet

 private:
  std::filesystem::path path_;
  bool by_position_;
  std::vector<TranscriptEntry> entries_;
  std::vector<bool> used_;
  std::size_t next_position_ = 0;
  int served_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace kforge::llm
