#include "cli/store_ids.h"

#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge {
namespace {

TEST(StoreIds, BareNumbersTakeTheExpectedKind) {
  EXPECT_EQ(parse_store_id("12").kind, IdKind::kRun);
  EXPECT_EQ(parse_store_id("12").number, 12);
  EXPECT_EQ(parse_store_id("run-12").kind, IdKind::kRun);
  EXPECT_EQ(parse_store_id("bench-3").kind, IdKind::kBench);
  EXPECT_EQ(parse_store_id("3", IdKind::kBench).kind, IdKind::kBench);
  EXPECT_EQ(parse_id_of_kind("bench-7", IdKind::kBench), 7);
  EXPECT_EQ(parse_id_of_kind("7", IdKind::kBench), 7);
  EXPECT_EQ(parse_id_of_kind("run-7", IdKind::kRun), 7);
}

TEST(StoreIds, AnotherKindOrNoIdIsAnError) {
  EXPECT_THROW(parse_id_of_kind("bench-1", IdKind::kRun), InputError);
  EXPECT_THROW(parse_id_of_kind("run-1", IdKind::kBench), InputError);
  for (const char* bad : {"", "0", "run-", "bench-0", "-3", "x12", "12x", "bench-1.5", "1234567890123456789012"})
    EXPECT_THROW(parse_store_id(bad), InputError) << bad;
}

}  // namespace
}  // namespace kforge
