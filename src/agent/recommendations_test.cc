#include "agent/recommendations.h"

#include <gtest/gtest.h>

namespace kforge::agent {
namespace {

TEST(Recommendations, ReadsNumberedAndBulletedItems) {
  auto r = parse_recommendations(
      "The kernel is memory-bound.\n\n1. Fuse the two passes\n   into one loop.\n2) Use `#pragma omp simd`.\n"
      "- Drop the temporary.\n\nThat should help.\n```cpp\n- not an item\n```\n");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], "Fuse the two passes into one loop.");
  EXPECT_EQ(r[1], "Use `#pragma omp simd`.");
  EXPECT_EQ(r[2], "Drop the temporary.");
}

TEST(Recommendations, ProseBecomesOneItemAndTheListIsCapped) {
  EXPECT_EQ(parse_recommendations("  Vectorise the inner loop.  ")[0], "Vectorise the inner loop.");
  std::string many;
  for (int i = 1; i <= 10; ++i) many += std::to_string(i) + ". item\n";
  EXPECT_EQ(parse_recommendations(many, 4).size(), 4u);
  EXPECT_TRUE(parse_recommendations("").empty());
}

}  // namespace
}  // namespace kforge::agent
