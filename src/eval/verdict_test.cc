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

TEST(Verdict, OnlyFastOnSeenInputsNeedsARealGap) {
  EXPECT_TRUE(only_fast_on_seen_inputs(1.0, 3.5));
  EXPECT_FALSE(only_fast_on_seen_inputs(1.0, 2.5));
  EXPECT_FALSE(only_fast_on_seen_inputs(0.01, 0.05));  // 5x, but 40 us: one cold call
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
