// ReplayProvider (see replay_provider.h).
#include "llm/replay_provider.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "llm/errors.h"
#include "llm/normalize.h"

namespace kforge::llm {

ReplayProvider::ReplayProvider(const std::filesystem::path& path, bool by_position)
    : path_(path), by_position_(by_position), entries_(read_transcript(path)), used_(entries_.size(), false) {}

std::size_t ReplayProvider::remaining() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count(used_.begin(), used_.end(), false));
}

void ReplayProvider::answered_from_store(const Request& request, const Response& /*response*/) {
  const std::string key = request_key(request);
  std::lock_guard lock(mutex_);
  ++served_;
  if (by_position_) {
    if (next_position_ < entries_.size()) used_[next_position_++] = true;
    return;
  }
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (!used_[i] && entries_[i].key == key) {
      used_[i] = true;
      return;
    }
  }
}

Response ReplayProvider::complete(const Request& request) {
  const std::string key = request_key(request);
  std::lock_guard lock(mutex_);
  const int number = ++served_;

  std::optional<std::size_t> match;
  if (by_position_) {
    if (next_position_ >= entries_.size()) {
      throw LlmError(ErrorKind::kReplayMismatch,
                     fmt::format("replay: request {} has no recorded reply: {} holds {} entr{}", number,
                                 path_.string(), entries_.size(), entries_.size() == 1 ? "y" : "ies"));
    }
    match = next_position_++;
    if (entries_[*match].key != key) {
      spdlog::warn("replay: request {} differs from transcript entry {} (replaying by position anyway); {}", number,
                   *match, describe_difference(normalized_request(entries_[*match].request), normalized_request(request)));
    }
  } else {
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (!used_[i] && entries_[i].key == key) {
        match = i;
        break;
      }
    }
    if (!match) {
      auto next = std::find(used_.begin(), used_.end(), false);
      std::string detail;
      if (next == used_.end()) {
        detail = fmt::format("all {} entries are used", entries_.size());
      } else {
        const auto& closest = entries_[static_cast<std::size_t>(next - used_.begin())];
        detail = fmt::format("compared with the next unused entry (seq {}): {}", closest.seq,
                             describe_difference(normalized_request(closest.request), normalized_request(request)));
      }
      throw LlmError(ErrorKind::kReplayMismatch,
                     fmt::format("replay: request {} (key {}) matches no unused entry of {}; {}\n"
                                 "Re-record the transcript, or pass --replay-by-position to replay replies in order.",
                                 number, key, path_.string(), detail));
    }
  }
  used_[*match] = true;
  Response response = entries_[*match].response;
  if (response.provider.empty()) response.provider = name();
  return response;
}

}  // namespace kforge::llm
