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

TEST(Speedup, MismatchedRoundsThrow) { EXPECT_THROW(estimate_speedup({1, 2}, {1}), std::invalid_argument); }

}  // namespace
}  // namespace kforge
