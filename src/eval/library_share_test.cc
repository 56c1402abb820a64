#include "eval/library_share.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

using json = nlohmann::json;

TEST(LibraryShare, TheListedComputationsOverTheWholeCall) {
  const json times = {{"seconds", 0.010}, {"ops", {{"matmul", 0.006}, {"conv", 0.002}, {"relu", 0.001}}}};
  EXPECT_DOUBLE_EQ(*library_share(times, {"matmul"}), 0.6);
  EXPECT_DOUBLE_EQ(*library_share(times, {"matmul", "conv"}), 0.8);
  EXPECT_DOUBLE_EQ(*library_share(times, {"attention"}), 0.0);  // allowed, not timed: none of the call
}

TEST(LibraryShare, StaysBetweenZeroAndOneAndNeedsACallTime) {
  EXPECT_DOUBLE_EQ(*library_share({{"seconds", 0.001}, {"ops", {{"matmul", 0.002}}}}, {"matmul"}), 1.0);
  EXPECT_DOUBLE_EQ(*library_share({{"seconds", 0.001}, {"ops", {{"matmul", -1.0}}}}, {"matmul"}), 0.0);
  EXPECT_FALSE(library_share({{"seconds", 0}, {"ops", {{"matmul", 0.002}}}}, {"matmul"}));
  EXPECT_FALSE(library_share({{"ops", {{"matmul", 0.002}}}}, {"matmul"}));
  EXPECT_FALSE(library_share({{"seconds", "fast"}}, {"matmul"}));
  EXPECT_DOUBLE_EQ(*library_share({{"seconds", 1.0}, {"ops", "none"}}, {"matmul"}), 0.0);
}

TEST(LibraryShare, DescribedWithTheShareWhereItWasMeasured) {
  EXPECT_EQ(describe_library_calls(std::vector<std::string>{"matmul", "conv"}, 0.623),
            "matmul, conv (62% of the candidate's time)");
  EXPECT_EQ(describe_library_calls(std::vector<std::string>{"matmul"}, std::nullopt), "matmul");
  EXPECT_EQ(describe_library_calls(std::vector<std::string>{}, 0.5), "");
  EXPECT_EQ(describe_library_calls(json{"matmul"}, json(0.5)), "matmul (50% of the candidate's time)");
  EXPECT_EQ(describe_library_calls(json{"matmul"}, json()), "matmul");
  EXPECT_EQ(describe_library_calls(json("matmul"), json(0.5)), "");  // not a list
}

}  // namespace
}  // namespace kforge
