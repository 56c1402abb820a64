#include "agent/recommendations.h"

#include <gtest/gtest.h>

namespace kforge::agent {
namespace {

TEST(Recommendations, ReadsNumberedItemsAndLeavesOutTheProseAround) {
  auto r = parse_recommendations(
      "The kernel is memory-bound.\n\n1. Fuse the two passes\n   into one loop.\n2) Use `#pragma omp simd`.\n"
      "3. Drop the temporary.\n\nThat should help.\n```cpp\n4. not an item\n```\n");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], "Fuse the two passes\n   into one loop.");
  EXPECT_EQ(r[1], "Use `#pragma omp simd`.");
  EXPECT_EQ(r[2], "Drop the temporary.");
}

TEST(Recommendations, BulletsWhenThereIsNoNumberedList) {
  auto r = parse_recommendations("Two ideas:\n\n- Vectorise with float4.\n  - align the base pointer first\n- Unroll by 4.\n");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], "Vectorise with float4.\n   - align the base pointer first");
  EXPECT_EQ(r[1], "Unroll by 4.");
}

TEST(Recommendations, ProseBecomesOneItemAndTheListIsCapped) {
  EXPECT_EQ(parse_recommendations("  Vectorise the inner loop.  ")[0], "Vectorise the inner loop.");
  std::string many;
  for (int i = 1; i <= 10; ++i) many += std::to_string(i) + ". item\n";
  EXPECT_EQ(parse_recommendations(many, 4).size(), 4u);
  EXPECT_EQ(parse_recommendations(many).size(), 10u);  // the analyst's count, not a smaller default
  EXPECT_TRUE(parse_recommendations("").empty());
}

// The shape of the analysis that was read as "6 recommendations": the first one's nested bullets
// became items 2-6 and the analyst's own items 2-5 were dropped.
TEST(Recommendations, NestedBulletsCodeAndParagraphsStayInTheirRecommendation) {
  const std::string reply = R"(**Diagnosis.** The candidate is a hand-written FFMA SGEMM at 0.91x of eager; cuBLAS runs at the fp32 peak.

1. **Use the library GEMM and fuse the epilogue.** The target allows `F.linear`:
   - call `F.linear(x, self.gemm.weight)` (cuBLAS, at peak);
   - apply bias, ReLU and the divide in one elementwise kernel over its output;
   - read the output once with `float4` loads.

   ```cuda
   extern "C" __global__ void epilogue(float4* y, const float4* b, int n4, float inv) { /* ... */ }
   ```

   This removes 8% of the time the hand GEMM loses and one pass over memory.

2. **Vectorise the epilogue's stores.** Use `float4` stores; the row length (8192) is a multiple of 4.

Keep the launch at 4 blocks per SM.

3. **Launch one block per 2 waves** of the 132 SMs instead of one per row.
4. **Avoid the `.contiguous()` copy** of the bias: it is contiguous already.
5. **Time it again with `--shapes`**, since 8192 hides tail handling.

These should bring it to about 1.05x.
)";
  auto r = parse_recommendations(reply);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0].rfind("**Use the library GEMM and fuse the epilogue.**", 0), 0u) << r[0];
  for (const char* inside : {"\n   - call `F.linear(x, self.gemm.weight)` (cuBLAS, at peak);", "\n   ```cuda\n",
                             "extern \"C\" __global__ void epilogue", "\n   This removes 8% of the time"})
    EXPECT_NE(r[0].find(inside), std::string::npos) << inside << "\n" << r[0];
  // A paragraph at the margin between two items belongs to the one before.
  EXPECT_NE(r[1].find("Keep the launch at 4 blocks per SM."), std::string::npos) << r[1];
  EXPECT_EQ(r[2], "**Launch one block per 2 waves** of the 132 SMs instead of one per row.");
  EXPECT_EQ(r[4], "**Time it again with `--shapes`**, since 8192 hides tail handling.");  // closing prose left out
}

TEST(Recommendations, NumberedHeadingsWithNumberedStepsInside) {
  const std::string reply = R"(## Analysis

The kernel reaches 41% of the bandwidth bound.

### 1. Fuse the reduction and the scale

Steps:
1. one block per row, 256 threads;
2. a warp-shuffle reduction;
3. scale while the row is still in registers.

### 2. Use 16-byte loads

```cuda
float4 v = reinterpret_cast<const float4*>(x)[i];
```

### 3. Drop the second kernel launch

## Summary
Expect 1.5-2x.
)";
  auto r = parse_recommendations(reply);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], "Fuse the reduction and the scale\n\n   Steps:\n   1. one block per row, 256 threads;\n"
                  "   2. a warp-shuffle reduction;\n   3. scale while the row is still in registers.");
  EXPECT_EQ(r[1], "Use 16-byte loads\n\n   ```cuda\n   float4 v = reinterpret_cast<const float4*>(x)[i];\n   ```");
  EXPECT_EQ(r[2], "Drop the second kernel launch");  // "## Summary" ends it
}

TEST(Recommendations, NumberedSectionsAroundANumberedList) {
  const std::string reply =
      "## 1. Analysis\n- memory-bound\n- 2 kernels\n\n## 2. Recommendations\n\n1. Fuse.\n   - keep bias in smem\n"
      "2. Unroll.\n\n10. Tenth, numbered out of order.\n";
  auto r = parse_recommendations(reply);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], "Fuse.\n   - keep bias in smem");
  EXPECT_EQ(r[1], "Unroll.");
  EXPECT_EQ(r[2], "Tenth, numbered out of order.");
}

}  // namespace
}  // namespace kforge::agent
