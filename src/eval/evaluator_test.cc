#include "eval/evaluator.h"

#include <gtest/gtest.h>

#include "eval/timing_stats.h"

namespace kforge {
namespace {

TEST(Crosscheck, HonestBlocksPass) {
  EXPECT_FALSE(crosscheck_block(50.0, 53.0, 5));   // a little overhead around the timed calls
  EXPECT_FALSE(crosscheck_block(0.2, 2.0, 5));     // tiny kernels: fixed overhead dominates
}

TEST(Crosscheck, ReportingMoreThanElapsedFails) {
  auto why = crosscheck_block(100.0, 50.0, 5);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("only 50.000 ms passed"), std::string::npos);
}

TEST(Crosscheck, ReportingFarLessThanElapsedFails) {
  // A patched clock that claims 1 ms per call while each call took 20 ms.
  EXPECT_TRUE(crosscheck_block(5.0, 100.0, 5));
}

TEST(TimingStats, MedianQuartilesAndSpread) {
  TimingStats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.reps, 5);
  EXPECT_DOUBLE_EQ(s.median_ms, 3);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 5);
  EXPECT_DOUBLE_EQ(s.p25_ms, 2);
  EXPECT_DOUBLE_EQ(s.p75_ms, 4);
  EXPECT_NEAR(s.iqr_rel(), 2.0 / 3.0, 1e-12);
}

TEST(EvalResult, ExitCodesFollowStatus) {
  EvalResult r;
  r.doc["status"] = "correct";
  EXPECT_EQ(r.exit_code(), 0);
  r.doc["status"] = "incorrect";
  EXPECT_EQ(r.exit_code(), 1);
  r.doc["status"] = "timeout";
  EXPECT_EQ(r.exit_code(), 1);
  r.doc["status"] = "problem_error";
  EXPECT_EQ(r.exit_code(), 2);
}

}  // namespace
}  // namespace kforge
