#include "eval/clock_floor.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(ClockFloor, AnHonestBlockReachesItsFloor) {
  // 5 repetitions of 2 ms and 0.5 ms between them, 11 ms on kforge's clock.
  ClockFloor f = clock_floor(10.0, 0.5, 11.0, 0.0, 5, 0.1);
  EXPECT_FALSE(f.below());
}

TEST(ClockFloor, TheMachinesRoundTripIsTakenOff) {
  ClockFloor loaded = clock_floor(10.0, 0.5, 40.0, 20.0, 5, 0.1);
  EXPECT_FALSE(loaded.below());
  EXPECT_TRUE(clock_floor(10.0, 0.5, 40.0, 0.0, 5, 0.1).below());
}

TEST(ClockFloor, AnHonestRequestsOverheadUnderLoadIsAllowed) {
  // relu_native's first kept block on a 2-core machine under a load of 10: 4.6 ms beside R and U.
  EXPECT_FALSE(clock_floor(0.2668, 0.57062, 5.613573, 0.132616, 5, 0.05).below());
  // 01_relu's relu_native under two busy loops: 4.7 ms beside R and U, with U five times R.
  EXPECT_FALSE(clock_floor(51.22, 196.6, 252.49, 0.0, 5, 31.54).below());
}

TEST(ClockFloor, FastClaimsForASlowKernelAreBelowTheFloor) {
  // Claimed 0.015 ms a call; the calls took 6 ms each on kforge's clock.
  ClockFloor f = clock_floor(0.075, 0.2, 30.5, 0.0, 5, 0.04);
  ASSERT_TRUE(f.below());
  EXPECT_GT(f.floor_ms - f.explained_ms, 20.0);
}

TEST(ClockFloor, TheSlackIsTheAllowanceAndATenthOfTheClaim) {
  // A block of 100 ms of repetitions and 200 ms of untimed work: the floor no longer gives a tenth
  // of the whole block (30 ms, where 50 ms were hidden), only 5 ms and a tenth of the claim.
  ClockFloor halved = clock_floor(50.0, 200.0, 301.0, 0.0, 5, 40.0);
  EXPECT_TRUE(halved.below());
  EXPECT_NEAR(halved.floor_ms, 301.0 - 5.0 - 5.0, 1e-9);
  // What can be hidden: the allowance and 10% of what is claimed.
  EXPECT_FALSE(clock_floor(87.0, 200.0, 300.0, 0.0, 5, 40.0).below());
  EXPECT_TRUE(clock_floor(80.0, 200.0, 300.0, 0.0, 5, 40.0).below());
}

TEST(ClockFloor, UntimedWorkIsBelievedOnlyUpToTheTrustedMeasure) {
  // The slow kernel's time claimed as work between repetitions: believed up to 3 x 0.04 x 5 + 1 ms.
  ClockFloor f = clock_floor(0.075, 30.0, 30.5, 0.0, 5, 0.04);
  EXPECT_TRUE(f.below());
  EXPECT_NEAR(f.explained_ms, 0.075 + 3 * 0.04 * 5 + 1.0, 1e-9);
  // Unknown (lean timing): the candidate's figure stands.
  EXPECT_FALSE(clock_floor(0.075, 30.0, 30.5, 0.0, 5, -1).below());
}

TEST(ClockFloor, ShortBlocksGetTheFixedAllowanceAndAreNotJudged) {
  ClockFloor f = clock_floor(0.1, 0.1, 5.0, 0.0, 5, 0.02);
  EXPECT_FALSE(f.below());
  EXPECT_FALSE(f.judged());
  EXPECT_TRUE(clock_floor(40.0, 10.0, 51.0, 0.0, 5, 2.0).judged());
}

TEST(JudgedBlockReps, BlocksGrowUntilTheirClaimsReachTheJudgedLength) {
  EXPECT_EQ(judged_block_reps(12.0, 5, 0), 5);       // 60 ms claimed: as planned
  EXPECT_EQ(judged_block_reps(6.0, 5, 0), 9);        // 54 ms
  EXPECT_EQ(judged_block_reps(0.015, 5, 0), kMaxBlockReps);
  EXPECT_EQ(judged_block_reps(0.0, 5, 0), kMaxBlockReps);  // a claim of nothing
  EXPECT_EQ(judged_block_reps(0.015, 5, 64ull << 20), 5);  // four outputs of 64 MiB fill the budget: as planned
  EXPECT_EQ(judged_block_reps(0.015, 5, 16ull << 20), 16);
}

TEST(ClockFloor, OnlyACandidateBelowEveryJudgedFloorIsRejected) {
  ClockFloor below = clock_floor(0.075, 0.2, 60.5, 0.0, 5, 0.04);
  ClockFloor fine = clock_floor(50.0, 0.5, 51.0, 0.0, 5, 0.1);
  ClockFloor short_fine = clock_floor(10.0, 0.5, 11.0, 0.0, 5, 0.1);
  EXPECT_FALSE(floor_verdict({}));
  EXPECT_FALSE(floor_verdict({below, below}));  // too few blocks to tell a forged timer from stalls
  EXPECT_FALSE(floor_verdict({below, fine, below}));
  auto why = floor_verdict({below, below, below});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("kforge's clock"), std::string::npos);
  EXPECT_TRUE(floor_verdict({below, short_fine, below, below}));  // a block too short to judge does not count
}

}  // namespace
}  // namespace kforge
