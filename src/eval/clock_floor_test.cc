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
}

TEST(ClockFloor, FastClaimsForASlowKernelAreBelowTheFloor) {
  // Claimed 0.015 ms a call; the calls took 6 ms each on kforge's clock.
  ClockFloor f = clock_floor(0.075, 0.2, 30.5, 0.0, 5, 0.04);
  ASSERT_TRUE(f.below());
  EXPECT_GT(f.floor_ms - f.explained_ms, 20.0);
}

TEST(ClockFloor, UntimedWorkIsBelievedOnlyUpToTheTrustedMeasure) {
  // The slow kernel's time claimed as work between repetitions: believed up to 3 x 0.04 x 5 + 1 ms.
  ClockFloor f = clock_floor(0.075, 30.0, 30.5, 0.0, 5, 0.04);
  EXPECT_TRUE(f.below());
  EXPECT_NEAR(f.explained_ms, 0.075 + 3 * 0.04 * 5 + 1.0, 1e-9);
  // Unknown (lean timing): the candidate's figure stands.
  EXPECT_FALSE(clock_floor(0.075, 30.0, 30.5, 0.0, 5, -1).below());
}

TEST(ClockFloor, ShortBlocksGetTheFixedAllowance) {
  EXPECT_FALSE(clock_floor(0.1, 0.1, 5.0, 0.0, 5, 0.02).below());
}

TEST(ClockFloor, OnlyACandidateBelowEveryFloorIsRejected) {
  ClockFloor below = clock_floor(0.075, 0.2, 30.5, 0.0, 5, 0.04);
  ClockFloor fine = clock_floor(10.0, 0.5, 11.0, 0.0, 5, 0.1);
  EXPECT_FALSE(floor_verdict({}));
  EXPECT_FALSE(floor_verdict({below, below}));  // too few blocks to tell a forged timer from stalls
  EXPECT_FALSE(floor_verdict({below, fine, below}));
  auto why = floor_verdict({below, below, below});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("kforge's clock"), std::string::npos);
}

// A block of 100 ms on kforge's clock (D = 0) whose repetitions and untimed work account for `explained`.
ClockFloor block_explaining(double explained) { return clock_floor(explained, 0.0, 100.0, 0.0, 5, -1); }

TEST(ClockFloor, AnHonestBlockAFewPercentShortOnlyWarns) {
  // 7.5% below the floor: what 47_Sum on an H200 (large untimed work on the device) fell below a
  // stricter floor.
  ClockFloor f = block_explaining(0.925 * (0.9 * 100.0 - 5.0));
  EXPECT_TRUE(f.below());
  EXPECT_FALSE(f.far_below());
  EXPECT_TRUE(floor_verdict({f, f, f, f, f, f}));
  EXPECT_FALSE(reject_verdict({f, f, f, f, f, f}));
}

TEST(ClockFloor, ABlockHalfShortIsFarBelow) {
  ClockFloor f = block_explaining(0.5 * (0.9 * 100.0 - 5.0));
  EXPECT_TRUE(f.far_below());
  auto why = reject_verdict({f, f, f, f, f, f});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("6 of 6 timed blocks"), std::string::npos) << *why;
}

TEST(ClockFloor, TheRejectionFloorIsAQuarterOfTheBlockAndTheAllowanceBelowTheClock) {
  EXPECT_NEAR(block_explaining(0).reject_floor_ms, 0.75 * 100.0 - 5.0, 1e-9);
  EXPECT_FALSE(block_explaining(70.0).far_below());
  EXPECT_TRUE(block_explaining(69.9).far_below());
  // Under load: D off the block and twice D beside the allowance.
  EXPECT_NEAR(clock_floor(0, 0, 100.0, 10.0, 5, -1).reject_floor_ms, 0.75 * 90.0 - 25.0, 1e-9);
}

TEST(ClockFloor, ANoisyBlockDoesNotDecide) {
  ClockFloor honest = block_explaining(95.0), stalled = block_explaining(20.0), forged = block_explaining(10.0);
  EXPECT_FALSE(reject_verdict({honest, stalled, honest, honest, honest, honest}));
  EXPECT_FALSE(reject_verdict({stalled, honest, stalled, honest, stalled, honest}));  // half is no majority
  // A forger honest in one block is rejected on the others.
  EXPECT_TRUE(reject_verdict({forged, forged, honest, forged, forged, forged}));
  EXPECT_FALSE(reject_verdict({forged, forged}));  // too few blocks to tell a forged timer from stalls
}

TEST(ClockFloor, ShortBlocksAreNotJudgedByTheRejectionFloor) {
  // 5 ms on kforge's clock: its allowance is all of it, and it can hide nothing the floor could find.
  ClockFloor short_block = clock_floor(0.0, 0.0, 5.0, 0.0, 5, -1);
  EXPECT_FALSE(short_block.judged());
  EXPECT_FALSE(short_block.far_below());
  ClockFloor forged = block_explaining(10.0);
  // Short blocks neither vote for an honest timer nor count against a forged one.
  EXPECT_TRUE(reject_verdict({forged, forged, forged, short_block, short_block, short_block}));
  EXPECT_FALSE(reject_verdict({short_block, short_block, short_block}));
}

}  // namespace
}  // namespace kforge
