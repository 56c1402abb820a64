#include "agent/source_diff.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace kforge::agent {

TEST(SourceDiff, ShowsTheChangedLinesWithLabels) {
  std::string d = unified_diff("a = 1\nb = 2\nc = 3\n", "a = 1\nb = 20\nc = 3\n", "r0.s0.a0 (best)", "r1.s0.a0");
  EXPECT_NE(d.find("--- r0.s0.a0 (best)"), std::string::npos) << d;
  EXPECT_NE(d.find("+++ r1.s0.a0"), std::string::npos) << d;
  EXPECT_NE(d.find("-b = 2\n"), std::string::npos) << d;
  EXPECT_NE(d.find("+b = 20\n"), std::string::npos) << d;
}

TEST(SourceDiff, EmptyForEqualSources) { EXPECT_EQ(unified_diff("x\n", "x\n", "a", "b"), ""); }

TEST(SourceDiff, CutsLongDiffsAndSaysHowMuchWasLeftOut) {
  std::string a, b;
  for (int i = 0; i < 50; ++i) {
    a += "line " + std::to_string(i) + "\n";
    b += "LINE " + std::to_string(i) + "\n";
  }
  std::string d = unified_diff(a, b, "a", "b", 10);
  EXPECT_NE(d.find("more diff lines)"), std::string::npos) << d;
  EXPECT_LT(std::count(d.begin(), d.end(), '\n'), 12);
}

}  // namespace kforge::agent
