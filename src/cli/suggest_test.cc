#include "cli/suggest.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

const std::vector<std::string> kCommands = {"eval", "targets", "llm", "run", "report", "bench", "profile", "doctor"};

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("eval", "eval"), 0);
  EXPECT_EQ(edit_distance("evall", "eval"), 1);
  EXPECT_EQ(edit_distance("evla", "eval"), 1);  // a swap is one edit
  EXPECT_EQ(edit_distance("", "run"), 3);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
}

TEST(Suggest, NearestCommandForATypo) {
  EXPECT_EQ(nearest("evall", kCommands), "eval");
  EXPECT_EQ(nearest("bnech", kCommands), "bench");
  EXPECT_EQ(nearest("reprot", kCommands), "report");
  EXPECT_EQ(nearest("target", kCommands), "targets");
  EXPECT_EQ(nearest("doctr", kCommands), "doctor");
}

TEST(Suggest, NothingForAWordFarFromEveryCommand) {
  EXPECT_FALSE(nearest("optimize", kCommands));
  EXPECT_FALSE(nearest("xy", kCommands));  // two edits from llm and run: too many for a two-letter word
  EXPECT_FALSE(nearest("", kCommands));
}

}  // namespace
}  // namespace kforge
