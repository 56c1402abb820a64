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

// Calls measured on 2 busy cores (docs/checks.md, cached results): the first call on each fresh set,
// and the calls on seen inputs in the same blocks.
TEST(Verdict, ContentCachesAreSlowOnFreshInputsByBothMeasures) {
  // content_cache_hidden on matmul 256 under 6 busy loops: fresh calls compute (0.45 ms unstalled),
  // seen calls return the stored result (0.02 ms unstalled, 0.25 ms at worst).
  EXPECT_TRUE(only_fast_on_seen_inputs({0.246, 0.243, 0.21, 0.22, 0.041, 0.024, 0.16, 0.066, 0.027, 0.214, 0.217, 0.214,
                                        0.243, 0.193, 0.145, 0.155, 0.026, 0.022},
                                       {20.058, 0.713, 0.528, 23.965, 19.996, 0.45}));
  // content_cache_plain, one cache hit stalled past the fastest fresh call.
  EXPECT_TRUE(only_fast_on_seen_inputs({0.136, 0.021, 0.016, 0.136, 0.149, 0.16, 0.153, 0.189, 0.157, 0.18, 0.151, 0.16,
                                        0.139, 0.156, 0.168, 0.11, 0.705, 0.149},
                                       {0.524, 15.986, 44.404, 19.988, 22.619, 17.027}));
}

// content_cache_hidden on matmul 512 under 2 busy loops on 2 cores: one hit of the first round stalled
// to 4.1 ms, past two of the three misses. Its pairs (15 of 18) did not say "cached", and when they
// gated the second round the cache was judged correct (1 run in 10). The fastest calls gate it now.
TEST(Verdict, OneStalledHitDoesNotSpareACache) {
  const std::vector<double> first_fresh = {7.23, 2.78, 3.25};
  const std::vector<double> first_seen = {0.054, 0.057, 4.085, 0.021, 0.077, 0.022};
  EXPECT_TRUE(fastest_fresh_call_far_slower(first_seen, first_fresh));
  EXPECT_TRUE(only_fast_on_seen_inputs(first_seen, first_fresh));  // 15 of 18 pairs: over 75%
  // Over both rounds, three hits of twelve stalled past every miss still leave 75% of the pairs.
  std::vector<double> seen = {0.054, 0.057, 4.085, 0.021, 0.077, 0.022, 0.05, 12.0, 0.03, 9.0, 0.02, 0.04};
  const std::vector<double> fresh = {7.23, 2.78, 3.25, 2.9, 3.1, 6.8};
  EXPECT_TRUE(only_fast_on_seen_inputs(seen, fresh));
  // Four stalled hits are too many: a machine that stalls a third of all calls says nothing either way.
  seen[0] = 15.0;
  EXPECT_FALSE(only_fast_on_seen_inputs(seen, fresh));
}

TEST(Verdict, HonestKernelsOnABusyMachineAreNotTakenForCaches) {
  // 14_mean_std_tuple, two of three fresh calls stalled (a rule on medians rejected it: 11.8 ms fresh,
  // 0.37 ms seen). The fastest calls are 1.4x apart.
  EXPECT_FALSE(only_fast_on_seen_inputs({0.372, 11.998, 0.195}, {13.734, 11.819, 0.271}));
  // relu_own_buffer under 6 busy loops: all six fresh calls stalled, three seen calls of eighteen
  // not (the fastest calls are 500x apart), but most seen calls were as stalled as the fresh ones.
  EXPECT_FALSE(only_fast_on_seen_inputs({20.101, 14.92, 0.063, 24.486, 16.058, 24.093, 28.302, 0.132, 0.027, 22.442,
                                         24.076, 16.037, 24.156, 24.11, 20.073, 22.706, 12.027, 20.086},
                                        {20.591, 32.013, 24.069, 24.062, 20.064, 13.576}));
}

TEST(Verdict, CachedResultsNeedTheRatioTheGapAndTheShare) {
  const double r = kCachedResultsRatio;
  EXPECT_TRUE(only_fast_on_seen_inputs({1.0, 1.0, 1.0}, {r * 1.01, r * 1.01}));
  EXPECT_FALSE(only_fast_on_seen_inputs({1.0, 1.0, 1.0}, {r * 0.99, r * 2}));          // fastest within the ratio
  EXPECT_FALSE(only_fast_on_seen_inputs({0.002, 0.002}, {0.04, 0.045}));  // 20x, but 38 us: a cold call
  // Every fresh call far slower than the fastest seen call, but a third of the seen calls slower still.
  EXPECT_FALSE(only_fast_on_seen_inputs({1.0, 1.0, 1.0, 1.0, 5 * r, 5 * r}, {2 * r, 2 * r, 2 * r}));
  EXPECT_TRUE(only_fast_on_seen_inputs({1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5 * r}, {2 * r, 2 * r, 2 * r}));
  EXPECT_TRUE(only_fast_on_seen_inputs({1.0, 1.0, 1.0, 5 * r}, {2 * r, 2 * r}));  // exactly the share
  EXPECT_FALSE(only_fast_on_seen_inputs({}, {4.0}));  // nothing to compare with
  EXPECT_FALSE(only_fast_on_seen_inputs({0.03}, {}));
  EXPECT_FALSE(fastest_fresh_call_far_slower({}, {4.0}));
  EXPECT_FALSE(fastest_fresh_call_far_slower({1.0}, {r * 0.99}));
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
