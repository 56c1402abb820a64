#include "eval/speedup.h"

#include <random>

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(Speedup, ClearWinIsFaster) {
  std::vector<double> a, b;
  std::mt19937 rng(1);
  std::normal_distribution<double> noise(0, 0.02);
  for (int i = 0; i < 10; ++i) {
    a.push_back(2.0 * (1 + noise(rng)));
    b.push_back(1.0 * (1 + noise(rng)));
  }
  auto e = estimate_speedup(a, b);
  EXPECT_NEAR(e.point, 2.0, 0.1);
  EXPECT_GT(e.low, 1.5);
  EXPECT_TRUE(e.faster());
  EXPECT_TRUE(is_faster(a, b));
}

TEST(Speedup, NoiseIsNotASpeedup) {
  // Same distribution for both: the interval must straddle 1.
  std::vector<double> a, b;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 0.1);
  for (int i = 0; i < 12; ++i) {
    a.push_back(1.0 + noise(rng));
    b.push_back(1.0 + noise(rng));
  }
  auto e = estimate_speedup(a, b);
  EXPECT_LE(e.low, 1.0);
  EXPECT_GE(e.high, 1.0);
  EXPECT_FALSE(e.faster());
}

TEST(Speedup, OneOutlierRoundDoesNotDecide) {
  std::vector<double> a = {1, 1, 1, 1, 1, 1, 1, 1}, b = {1.02, 0.98, 1.01, 0.99, 1.0, 1.03, 0.97, 0.1};
  EXPECT_FALSE(estimate_speedup(a, b).faster());
}

TEST(Speedup, FewRoundsUseTheRangeOfRatios) {
  auto e = estimate_speedup({2.0, 1.0}, {1.0, 1.0});
  EXPECT_DOUBLE_EQ(e.low, 1.0);
  EXPECT_DOUBLE_EQ(e.high, 2.0);
  EXPECT_FALSE(e.faster());
}

TEST(Speedup, ThePointLiesInsideTheIntervalWhenTheLoadMovesBothTogether) {
  // Interleaved rounds share the machine's load: a busy round slows the baseline and the candidate
  // alike. The per-round ratios are 0.9, 1.1 and 0.95; the point is their median, strictly inside
  // the interval. (A ratio of the two medians took both from the same, middle round: 1.1, which was
  // also the interval's top.)
  const std::vector<double> a = {1.0, 2.0, 3.0}, b = {1.0 / 0.9, 2.0 / 1.1, 3.0 / 0.95};
  auto e = estimate_speedup(a, b);
  EXPECT_NEAR(e.point, 0.95, 1e-12);
  EXPECT_NEAR(e.low, 0.9, 1e-12);
  EXPECT_NEAR(e.high, 1.1, 1e-12);
}

TEST(Speedup, ThePointIsNeverAnEndOfTheIntervalUnderChangingLoad) {
  std::mt19937 rng(3);
  std::lognormal_distribution<double> load(0, 1.0);  // round-to-round load, shared by both
  std::normal_distribution<double> noise(0, 0.05);   // each function's own noise
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> a, b;
    for (int round = 0; round < 5; ++round) {
      const double l = load(rng);
      a.push_back(1.0 * l * (1 + noise(rng)));
      b.push_back(0.9 * l * (1 + noise(rng)));
    }
    auto e = estimate_speedup(a, b);
    EXPECT_LT(e.low, e.point) << trial;
    EXPECT_LT(e.point, e.high) << trial;
  }
}

TEST(Speedup, MismatchedRoundsThrow) { EXPECT_THROW(estimate_speedup({1, 2}, {1}), std::invalid_argument); }

}  // namespace
}  // namespace kforge
