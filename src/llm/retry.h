// Retries with exponential backoff and jitter for transient failures (429, 5xx, network,
// timeouts, truncated bodies), honouring the server's Retry-After, bounded by a number of
// attempts and by total wall time, and interruptible by Ctrl-C.
#pragma once

#include <chrono>
#include <functional>
#include <random>
#include <string_view>

#include "llm/cancel.h"
#include "llm/provider.h"

namespace kforge::llm {

struct RetryPolicy {
  int max_attempts = 5;                                       // first attempt included
  std::chrono::milliseconds base_delay{1000};                 // wait before the first retry
  std::chrono::milliseconds max_delay{std::chrono::seconds(60)};   // cap of one backoff wait
  std::chrono::milliseconds max_total{std::chrono::seconds(900)};  // attempts and waits together
};

// Backoff before retry number `retry` (1 for the first retry): base * 2^(retry-1), capped
// at max_delay, then "equal jitter": uniformly drawn from [d/2, d].
std::chrono::milliseconds backoff_delay(const RetryPolicy& policy, int retry, std::mt19937_64& rng);

// Time left for one attempt.
using AttemptBudget = std::chrono::milliseconds;

// Calls `attempt` until it returns, a non-retryable LlmError is thrown, the attempts or the
// wall time run out, or `cancel` is set. Sets Response::attempts. A server-requested wait
// (Retry-After) replaces the computed backoff; if it would exceed the remaining wall time
// the last error is thrown at once. The error thrown after the last attempt keeps its kind
// and says how many attempts were made.
Response run_with_retries(const RetryPolicy& policy, const CancelFlag* cancel, std::string_view what,
                          const std::function<Response(AttemptBudget)>& attempt);

}  // namespace kforge::llm
