// Costs, price lookup and the per-run meter.
#include "llm/usage.h"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

TEST(Usage, CostFromPricePerMillionTokens) {
  Usage u;
  u.input_tokens = 1'000'000;
  u.output_tokens = 500'000;
  EXPECT_DOUBLE_EQ(cost_usd(u, Price{2.5, 10.0}), 7.5);
}

TEST(Usage, MeterSumsCallsAndCountsUnpriced) {
  UsageMeter meter;
  Response a;
  a.usage = {100, 50};
  a.latency = std::chrono::milliseconds(1500);
  a.cost_usd = 0.25;
  Response b;
  b.usage = {10, 5};
  b.latency = std::chrono::milliseconds(500);
  meter.record(a);
  meter.record(b);
  UsageTotals t = meter.totals();
  EXPECT_EQ(t.calls, 2);
  EXPECT_EQ(t.usage.input_tokens, 110);
  EXPECT_EQ(t.usage.output_tokens, 55);
  EXPECT_EQ(t.latency.count(), 2000);
  EXPECT_DOUBLE_EQ(t.cost_usd, 0.25);
  EXPECT_EQ(t.unpriced_calls, 1);
  EXPECT_EQ(format_totals(t), "2 calls, 110 input + 55 output tokens, 2.00 s total latency, $0.2500 (+1 unpriced call)");
}

}  // namespace
}  // namespace kforge::llm
