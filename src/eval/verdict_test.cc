#include "eval/verdict.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

using json = nlohmann::json;

TEST(Verdict, MergeKeepsTheWorstVerdictPerName) {
  json checks = json::array();
  merge_check(checks, {{"name", "file_io"}, {"verdict", "pass"}, {"message", "ok"}});
  merge_check(checks, {{"name", "file_io"}, {"verdict", "fail"}, {"message", "opened /etc/passwd"}});
  merge_check(checks, {{"name", "file_io"}, {"verdict", "warn"}, {"message", "later"}});
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0]["verdict"], "fail");
  EXPECT_EQ(checks[0]["message"], "opened /etc/passwd");
}

TEST(Verdict, PhysicalBoundUsesTheSlack) {
  EXPECT_TRUE(beyond_physical_bound(1.0, 0.2, 3.0));   // 0.6 < 1.0
  EXPECT_FALSE(beyond_physical_bound(1.0, 0.4, 3.0));  // 1.2 >= 1.0
  EXPECT_FALSE(beyond_physical_bound(0.0, 0.1, 3.0));  // no bound: judges nobody
}

// Cached results (docs/checks.md): one round's fresh calls against the lower quartile of its calls on
// seen sets, with calls measured on 2 busy cores.
bool round_says_cached(const std::vector<double>& seen, const std::vector<double>& fresh) {
  return far_slower(fresh, lower_quartile(seen));
}

TEST(Verdict, LowerQuartile) {
  EXPECT_EQ(lower_quartile({}), 0.0);
  EXPECT_EQ(lower_quartile({3.0}), 3.0);
  EXPECT_EQ(lower_quartile({5.0, 1.0, 4.0, 2.0, 3.0}), 2.0);
  EXPECT_EQ(lower_quartile({9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0}), 3.0);
}

// content_cache_hidden on matmul 512 under 2 busy loops: one hit stalled to 4.1 ms, past two of the
// three misses. The quartile is a hit all the same.
TEST(Verdict, AStalledHitDoesNotSpareACache) {
  EXPECT_TRUE(round_says_cached({0.054, 0.057, 4.085, 0.021, 0.077, 0.022}, {7.23, 2.78, 3.25}));
  // content_cache_hidden on matmul 256 under 6 busy loops: misses 0.45 ms unstalled, hits 0.02 to 0.25.
  EXPECT_TRUE(round_says_cached({0.246, 0.243, 0.21, 0.22, 0.041, 0.024, 0.16, 0.066, 0.027, 0.214, 0.217, 0.214,
                                 0.243, 0.193, 0.145, 0.155, 0.026, 0.022},
                                {20.058, 0.713, 0.528, 23.965, 19.996, 0.45}));
}

// A cache that slows some of its hits on purpose, so that they look like misses: it keeps its median
// (its claimed speed) only while more than half of them stay fast, and then the quartile is fast too.
TEST(Verdict, HitsSlowedOnPurposeDoNotSpareACache) {
  EXPECT_TRUE(round_says_cached({0.02, 9.0, 0.02, 9.0, 0.02, 0.02, 9.0, 0.02, 0.02, 9.0, 0.02, 0.02, 9.0, 0.02, 0.02},
                                {3.4, 3.5, 3.6}));
}

TEST(Verdict, HonestKernelsOnABusyMachineAreNotTakenForCaches) {
  // relu_native while the end-to-end suite ran beside it: a burst stalled whole blocks by scheduler
  // ticks, fresh calls and seen ones alike; two seen calls of nine escaped it (the fastest calls were
  // 380x apart, and a rule on them asked for a second round).
  EXPECT_FALSE(round_says_cached({7.988, 0.125, 0.021, 4.475, 7.996, 8.08, 16.835, 11.355, 12.01}, {8.0, 7.997, 8.003}));
  // The run CI rejected: every fresh call 12 ms or more, one seen call of twelve at 0.015 ms, most of
  // the others stalled a little less than the fresh ones (fresh calls slower in 75% of pairs).
  EXPECT_FALSE(round_says_cached({0.0153, 11.9, 11.96, 7.99, 11.97, 8.0, 4.1, 11.99, 11.95, 12.0, 8.02, 11.98},
                                 {12.0, 12.01, 15.99}));
  // 14_mean_std_tuple, two of three fresh calls stalled (a rule on both medians rejected it).
  EXPECT_FALSE(round_says_cached({0.372, 11.998, 0.195}, {13.734, 11.819, 0.271}));
  // relu_own_buffer under 6 busy loops: all six fresh calls stalled, three seen calls of eighteen not.
  EXPECT_FALSE(round_says_cached({20.101, 14.92, 0.063, 24.486, 16.058, 24.093, 28.302, 0.132, 0.027, 22.442, 24.076,
                                  16.037, 24.156, 24.11, 20.073, 22.706, 12.027, 20.086},
                                 {20.591, 32.013, 24.069, 24.062, 20.064, 13.576}));
}

TEST(Verdict, FarSlowerNeedsTheRatioAndTheGap) {
  const double r = kCachedResultsRatio;
  EXPECT_TRUE(far_slower({r * 1.01, r * 2}, 1.0));
  EXPECT_FALSE(far_slower({r * 0.99, r * 2}, 1.0));  // the fastest fresh call decides
  EXPECT_FALSE(far_slower({0.04, 0.045}, 0.002));    // 20x, but 38 us: a cold call
  EXPECT_FALSE(far_slower({}, 1.0));                 // nothing to compare
  EXPECT_FALSE(far_slower({4.0}, 0.0));
}

TEST(Verdict, FirstFailure) {
  json f = json::array({{{"name", "a"}, {"verdict", "warn"}}, {{"name", "b"}, {"verdict", "fail"}}});
  ASSERT_TRUE(first_failure(f));
  EXPECT_EQ((*first_failure(f))["name"], "b");
  EXPECT_FALSE(first_failure(json::array()));
}

TEST(Verdict, SpeedOfLight) {
  EXPECT_EQ(judge_sol(4.0, 0.02, 5.0, 2.0), SolCall::kBeyond);        // a cache hit on a 4 ms matmul
  EXPECT_EQ(judge_sol(4.0, 3.0, 5.0, 2.0), SolCall::kWithin);         // close to SOL, within the slack
  EXPECT_EQ(judge_sol(4.0, 0.02, 1.0, 2.0), SolCall::kModelUnreliable);  // eager beats SOL too
  EXPECT_EQ(judge_sol(0.0, 1.0, 1.0, 2.0), SolCall::kUnknown);
  EXPECT_DOUBLE_EQ(percent_of_sol(4.0, 0.02), 20000.0);  // never clamped
}

}  // namespace
}  // namespace kforge
