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

}  // namespace
}  // namespace kforge
