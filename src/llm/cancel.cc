// Cancellation flag and SIGINT handler (see cancel.h).
#include "llm/cancel.h"

#include <csignal>
#include <thread>

#include "llm/errors.h"
#include "util/interrupt.h"

namespace kforge::llm {

static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT handler needs a lock-free flag");

// One flag with the waits outside the LLM clients (util/interrupt.h).
CancelFlag& global_cancel_flag() { return interrupt_flag(); }

namespace {

void on_sigint(int) {
  CancelFlag& flag = global_cancel_flag();
  if (flag.exchange(true)) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

}  // namespace

void install_sigint_handler() {
  (void)global_cancel_flag();  // construct before any signal can arrive
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
}

bool is_cancelled(const CancelFlag* flag) { return flag && flag->load(); }

void throw_if_cancelled(const CancelFlag* flag) {
  if (is_cancelled(flag)) throw LlmError(ErrorKind::kCancelled, "interrupted (Ctrl-C)");
}

bool sleep_unless_cancelled(std::chrono::milliseconds duration, const CancelFlag* flag) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + duration;
  constexpr auto kStep = std::chrono::milliseconds(20);
  while (true) {
    if (is_cancelled(flag)) return false;
    auto now = clock::now();
    if (now >= deadline) return true;
    std::this_thread::sleep_for(std::min<clock::duration>(kStep, deadline - now));
  }
}

}  // namespace kforge::llm
