#include "eval/repetition_sampler.h"

#include <set>

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(RepetitionSampler, NoSetTwiceInARowAcrossBlocks) {
  RepetitionSampler sampler(1);
  int last = -1;
  std::set<int> seen;
  for (int block = 0; block < 50; ++block) {
    for (int set : sampler.schedule(5, 3)) {
      ASSERT_GE(set, 0);
      ASSERT_LT(set, 3);
      EXPECT_NE(set, last);
      last = set;
      seen.insert(set);
    }
  }
  EXPECT_EQ(seen.size(), 3u);  // every set is used
}

TEST(RepetitionSampler, OneSetOrNone) {
  RepetitionSampler sampler(2);
  EXPECT_EQ(sampler.schedule(3, 1), (std::vector<int>{0, 0, 0}));
  EXPECT_TRUE(sampler.schedule(3, 0).empty());
}

TEST(RepetitionSampler, PicksAreDistinctAndCoverEveryRepetitionOverTime) {
  RepetitionSampler sampler(3);
  std::set<int> ever;
  for (int i = 0; i < 200; ++i) {
    std::vector<int> p = sampler.picks(5, 2);
    ASSERT_EQ(p.size(), 2u);
    EXPECT_LT(p[0], p[1]);
    EXPECT_LT(p[1], 5);
    ever.insert(p.begin(), p.end());
  }
  EXPECT_EQ(ever.size(), 5u);  // no repetition is never looked at
  EXPECT_EQ(sampler.picks(1, 2), std::vector<int>{0});
  EXPECT_TRUE(sampler.picks(0, 2).empty());
}

TEST(RepetitionSampler, TwoSamplersWithoutASeedDisagree) {
  RepetitionSampler a, b;
  EXPECT_NE(a.schedule(40, 3), b.schedule(40, 3));
}

}  // namespace
}  // namespace kforge
