#include "bench/bench_progress.h"

#include <gtest/gtest.h>

namespace kforge::bench {
namespace {

TEST(BenchProgress, CountsRunningAndFailedProblems) {
  BenchProgress p(false, 4, 1, 0, 2);  // one problem finished before a resume
  EXPECT_EQ(p.status_text(), "1/4 done, 0 failed");
  p.started("a");
  p.started("b");
  EXPECT_EQ(p.status_text(), "1/4 done, 0 failed, running: a b");
  p.finished("a", false, "incorrect");
  EXPECT_EQ(p.status_text().substr(0, 30), "2/4 done, 1 failed, running: b");
}

TEST(BenchProgress, EtaSpreadsTheProblemsLeftOverTheJobs) {
  EXPECT_DOUBLE_EQ(*BenchProgress::eta_seconds(10.0, 4, 2), 20.0);
  EXPECT_DOUBLE_EQ(*BenchProgress::eta_seconds(10.0, 1, 4), 10.0);  // one left runs alone
  EXPECT_FALSE(BenchProgress::eta_seconds(0.0, 4, 2));
}

TEST(BenchProgress, Durations) {
  EXPECT_EQ(format_duration(9), "9s");
  EXPECT_EQ(format_duration(125), "2m05s");
  EXPECT_EQ(format_duration(3725), "1h02m");
}

}  // namespace
}  // namespace kforge::bench
