// Backoff arithmetic, Retry-After parsing and the retry loop's caps.
#include "llm/retry.h"

#include <gtest/gtest.h>

#include "llm/errors.h"
#include "llm/http_errors.h"

namespace kforge::llm {
namespace {

using namespace std::chrono_literals;

TEST(Retry, BackoffGrowsExponentiallyWithJitterAndCap) {
  RetryPolicy p;
  p.base_delay = 100ms;
  p.max_delay = 1000ms;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 50; ++i) {
    auto d1 = backoff_delay(p, 1, rng), d3 = backoff_delay(p, 3, rng), d10 = backoff_delay(p, 10, rng);
    EXPECT_GE(d1, 50ms);
    EXPECT_LE(d1, 100ms);
    EXPECT_GE(d3, 200ms);
    EXPECT_LE(d3, 400ms);
    EXPECT_GE(d10, 500ms);
    EXPECT_LE(d10, 1000ms);
  }
}

TEST(Retry, ParsesRetryAfter) {
  HttpResponse r;
  EXPECT_FALSE(retry_after(r));
  r.headers = {{"retry-after", "7"}};
  EXPECT_EQ(*retry_after(r), 7000ms);
  r.headers = {{"retry-after", "0.5"}};
  EXPECT_EQ(*retry_after(r), 500ms);
  r.headers = {{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}};  // in the past
  EXPECT_EQ(*retry_after(r), 0ms);
  r.headers = {{"retry-after", "7"}, {"retry-after-ms", "1234"}};
  EXPECT_EQ(*retry_after(r), 1234ms);
  r.headers = {{"retry-after", "soon"}};
  EXPECT_FALSE(retry_after(r));
}

TEST(Retry, StopsOnNonRetryableErrorAtOnce) {
  int calls = 0;
  RetryPolicy p;
  p.base_delay = 1ms;
  EXPECT_THROW(run_with_retries(p, nullptr, "t",
                                [&](AttemptBudget) -> Response {
                                  ++calls;
                                  throw LlmError(ErrorKind::kAuth, "no");
                                }),
               LlmError);
  EXPECT_EQ(calls, 1);
}

TEST(Retry, WallTimeCapEndsRetries) {
  RetryPolicy p;
  p.max_attempts = 1000;
  p.base_delay = 40ms;
  p.max_delay = 40ms;
  p.max_total = 300ms;
  int calls = 0;
  auto start = std::chrono::steady_clock::now();
  try {
    run_with_retries(p, nullptr, "t", [&](AttemptBudget left) -> Response {
      ++calls;
      EXPECT_LE(left, 300ms);
      throw LlmError(ErrorKind::kServer, "busy", true);
    });
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_NE(std::string(e.what()).find("max_total_s"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_GT(calls, 3);
  EXPECT_LT(calls, 40);
}

TEST(Retry, CancelDuringBackoff) {
  RetryPolicy p;
  p.base_delay = 10s;
  p.max_delay = 10s;
  CancelFlag cancel{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    cancel = true;
  });
  auto start = std::chrono::steady_clock::now();
  try {
    run_with_retries(p, &cancel, "t", [&](AttemptBudget) -> Response { throw LlmError(ErrorKind::kNetwork, "x", true); });
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled);
  }
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(HttpErrors, ServerMessageFromCommonBodies) {
  EXPECT_EQ(server_error_message(R"({"error":{"message":"m1"}})"), "m1");
  EXPECT_EQ(server_error_message(R"({"type":"error","error":{"type":"x","message":"m2"}})"), "m2");
  EXPECT_EQ(server_error_message(R"({"object":"error","message":"m3"})"), "m3");
  EXPECT_EQ(server_error_message(R"({"error":"m4"})"), "m4");
  EXPECT_EQ(server_error_message(R"({"detail":"m5"})"), "m5");
  EXPECT_EQ(server_error_message(""), "(empty body)");
  EXPECT_EQ(server_error_message("Bad\nGateway"), "Bad Gateway");
}

}  // namespace
}  // namespace kforge::llm
