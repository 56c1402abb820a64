// The process-wide "the user pressed Ctrl-C" flag, set by the SIGINT handler (llm/cancel.h). Every
// blocking wait checks it, so that a run stops within a moment: an LLM call unwinds, and a wait on a
// worker's reply ends as if its deadline had passed (the evaluation in flight is abandoned; the
// caller that asked for it decides not to keep what it returns).
#pragma once

#include <atomic>

namespace kforge {

inline std::atomic<bool>& interrupt_flag() {
  static std::atomic<bool> flag{false};
  return flag;
}

inline bool interrupted() { return interrupt_flag().load(std::memory_order_relaxed); }

}  // namespace kforge
