#include "agent/reply_idea.h"

#include <gtest/gtest.h>

namespace kforge::agent {

TEST(ReplyIdea, TakesTheFirstSentenceOfTheProseOutsideCode) {
  std::string reply =
      "## Plan\n\nFuse the bias add into the GEMM epilogue. Also unroll by 4.\n\n```python\n# code\nx = 1\n```\nDone.";
  EXPECT_EQ(reply_idea(reply, "x = 1\n"), "Fuse the bias add into the GEMM epilogue.");
}

TEST(ReplyIdea, FallsBackToTheProgramsFirstComment) {
  std::string code = "#!/usr/bin/env python\nimport torch\n# Row softmax: one pass for max and sum (online softmax)\n";
  EXPECT_EQ(reply_idea("```python\n" + code + "```", code), "Row softmax: one pass for max and sum (online softmax)");
}

TEST(ReplyIdea, IsOneShortLine) {
  std::string reply = "Tile | the | rows " + std::string(300, 'x') + "\n```python\nx=1\n```";
  std::string idea = reply_idea(reply, "x=1", 40);
  EXPECT_EQ(idea.size(), 40u);
  EXPECT_EQ(idea.find('|'), std::string::npos);
  EXPECT_EQ(idea.substr(37), "...");
}

TEST(ReplyIdea, EmptyWhenNothingIsSaid) { EXPECT_EQ(reply_idea("```python\nx = 1\n```", "x = 1\n"), ""); }

}  // namespace kforge::agent
