// Ctrl-C must stop an LLM call promptly and cleanly: the SIGINT handler only sets a flag,
// and every blocking step (curl transfers, retry waits, exec children, manual: polling)
// checks it and unwinds with LlmError(kCancelled).
#pragma once

#include <atomic>
#include <chrono>

namespace kforge::llm {

using CancelFlag = std::atomic<bool>;

// The process-wide flag that install_sigint_handler() sets.
CancelFlag& global_cancel_flag();

// First Ctrl-C sets global_cancel_flag(); a second one ends the process the default way.
void install_sigint_handler();

// True when `flag` is set (a null flag is never set).
bool is_cancelled(const CancelFlag* flag);

// Throws LlmError(kCancelled) when `flag` is set.
void throw_if_cancelled(const CancelFlag* flag);

// Sleeps for `duration` in short steps; returns false early when `flag` gets set.
bool sleep_unless_cancelled(std::chrono::milliseconds duration, const CancelFlag* flag);

}  // namespace kforge::llm
