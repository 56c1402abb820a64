// Retry loop (see retry.h).
#include "llm/retry.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "llm/errors.h"
#include "llm/secrets.h"

namespace kforge::llm {

using std::chrono::milliseconds;

milliseconds backoff_delay(const RetryPolicy& policy, int retry, std::mt19937_64& rng) {
  double d = static_cast<double>(policy.base_delay.count());
  for (int i = 1; i < retry && d < policy.max_delay.count(); ++i) d *= 2;
  d = std::min(d, static_cast<double>(policy.max_delay.count()));
  std::uniform_real_distribution<double> jitter(d / 2, d);
  return milliseconds(static_cast<std::int64_t>(jitter(rng)));
}

Response run_with_retries(const RetryPolicy& policy, const CancelFlag* cancel, std::string_view what,
                          const std::function<Response(AttemptBudget)>& attempt) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline = start + policy.max_total;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const int max_attempts = std::max(1, policy.max_attempts);

  for (int n = 1;; ++n) {
    throw_if_cancelled(cancel);
    auto left = std::chrono::duration_cast<milliseconds>(deadline - clock::now());
    try {
      Response response = attempt(std::max(left, milliseconds(1)));
      response.attempts = n;
      return response;
    } catch (const LlmError& e) {
      if (e.kind() == ErrorKind::kCancelled || !e.retryable()) throw;
      const double elapsed_s = std::chrono::duration<double>(clock::now() - start).count();
      auto give_up = [&](std::string_view why) {
        throw LlmError(e.kind(), fmt::format("{} ({}; {} attempt{} over {:.1f} s)", e.what(), why, n,
                                             n == 1 ? "" : "s", elapsed_s),
                       false, e.retry_after(), e.http_status());
      };
      if (n >= max_attempts) give_up("giving up: [llm.retry] max_attempts reached");
      milliseconds wait = e.retry_after() ? *e.retry_after() : backoff_delay(policy, n, rng);
      left = std::chrono::duration_cast<milliseconds>(deadline - clock::now());
      if (wait >= left) {
        give_up(e.retry_after() ? fmt::format("giving up: the server asked to wait {:.1f} s, beyond the "
                                              "retry time budget ([llm.retry] max_total_s)",
                                              wait.count() / 1000.0)
                                : std::string("giving up: [llm.retry] max_total_s reached"));
      }
      spdlog::warn("{}: {}; retrying in {:.1f} s (attempt {} of {})", what, redact_secrets(e.what()),
                   wait.count() / 1000.0, n + 1, max_attempts);
      if (!sleep_unless_cancelled(wait, cancel)) throw_if_cancelled(cancel);
    }
  }
}

}  // namespace kforge::llm
