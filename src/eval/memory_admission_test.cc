#include "eval/memory_admission.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

MemoryReservation running(std::uint64_t ticket, std::uint64_t bytes, bool alone = false) {
  return {1, ticket, bytes, alone, true};
}
MemoryReservation waiting(std::uint64_t ticket, std::uint64_t bytes, bool alone = false) {
  return {1, ticket, bytes, alone, false};
}

TEST(MemoryBudget, FreeMemoryLessTheMarginOrTheCapWhenSmaller) {
  EXPECT_EQ(memory_budget(10 * kGiB, std::nullopt), 9 * kGiB);
  EXPECT_EQ(memory_budget(10 * kGiB, 4 * kGiB), 4 * kGiB);
  EXPECT_EQ(memory_budget(10 * kGiB, 20 * kGiB), 9 * kGiB);  // a cap never adds memory the device lacks
}

TEST(MayStart, EvaluationsStartWhileTheirSumFits) {
  const auto me = waiting(3, 4 * kGiB);
  EXPECT_TRUE(may_start({running(1, 3 * kGiB), running(2, 3 * kGiB), me}, me, 10 * kGiB));
  EXPECT_FALSE(may_start({running(1, 3 * kGiB), running(2, 4 * kGiB), me}, me, 10 * kGiB));
  EXPECT_TRUE(may_start({running(1, 6 * kGiB), me}, me, 10 * kGiB));  // exactly the budget
}

TEST(MayStart, AnythingStartsOnAnIdleDeviceEvenWhenLargerThanIt) {
  const auto big = waiting(1, 50 * kGiB);
  EXPECT_TRUE(may_start({big}, big, 10 * kGiB));
  EXPECT_TRUE(may_start({}, waiting(1, 1), 10 * kGiB));  // the list need not hold it
}

TEST(MayStart, LargerThanTheBudgetOrAskedToRunsAlone) {
  const auto big = waiting(2, 11 * kGiB);
  EXPECT_FALSE(may_start({running(1, 1), big}, big, 10 * kGiB));
  const auto retry = waiting(2, 1, true);
  EXPECT_FALSE(may_start({running(1, 1), retry}, retry, 10 * kGiB));
  // ... and nothing starts beside it once it runs.
  const auto small = waiting(3, 1);
  EXPECT_FALSE(may_start({running(2, 11 * kGiB), small}, small, 10 * kGiB));
  EXPECT_FALSE(may_start({running(2, 1, true), small}, small, 10 * kGiB));
  EXPECT_TRUE(runs_alone(waiting(1, 11 * kGiB), 10 * kGiB));
  EXPECT_FALSE(runs_alone(waiting(1, 10 * kGiB), 10 * kGiB));
}

TEST(MayStart, FirstComeFirstServed) {
  // A small evaluation that would fit waits behind an earlier one that does not: the large one
  // is not starved by a stream of small ones.
  const auto large = waiting(2, 8 * kGiB);
  const auto small = waiting(3, 1 * kGiB);
  const std::vector<MemoryReservation> all = {running(1, 5 * kGiB), large, small};
  EXPECT_FALSE(may_start(all, large, 10 * kGiB));
  EXPECT_FALSE(may_start(all, small, 10 * kGiB));
  // The earliest waiter starts as soon as nothing blocks it, even on an idle device.
  EXPECT_TRUE(may_start({large, small}, large, 10 * kGiB));
  EXPECT_FALSE(may_start({large, small}, small, 10 * kGiB));
}

}  // namespace
}  // namespace kforge
