#include "agent/reply_parser.h"

#include <gtest/gtest.h>

namespace kforge::agent {
namespace {

const char* kProgram = R"(import torch
import torch.nn as nn

SRC = r"""
extern "C" void relu(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0; }
"""


class ModelNew(nn.Module):
    def forward(self, x):
        return x
)";

TEST(ReplyParser, TakesThePythonBlockAmongSeveral) {
  std::string reply = std::string("Here is the kernel:\n```cpp\nextern \"C\" void f() {}\n```\nAnd the module:\n```python\n") +
                      kProgram + "```\nThis should be fast.\n";
  auto r = parse_candidate_reply(reply, false);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.code, kProgram);
  EXPECT_EQ(r.repairs.front(), "used code block 2 of 2");
}

TEST(ReplyParser, PrefersTheLaterOfTwoEquallyGoodBlocks) {
  std::string second = std::string(kProgram) + "# v2\n";
  std::string reply = std::string("```python\n") + kProgram + "```\nBetter:\n```python\n" + second + "```\n";
  EXPECT_EQ(parse_candidate_reply(reply, false).code, second);
}

TEST(ReplyParser, FindsAProgramWithoutFencesAndDropsTheProse) {
  std::string reply = std::string("Sure! Below is my solution.\n\n") + kProgram +
                      "\nThis version vectorises the loop and should be much faster.\n";
  auto r = parse_candidate_reply(reply, false);
  ASSERT_TRUE(r.ok) << r.problem;
  EXPECT_EQ(r.code, kProgram);
}

TEST(ReplyParser, ATruncatedReplyBecomesFeedback) {
  std::string program = kProgram;
  std::string cut = "```python\n" + program.substr(0, program.find("extern") + 20);
  auto r = parse_candidate_reply(cut, true);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.truncated);
  EXPECT_NE(r.problem.find("cut off"), std::string::npos);
  // Even without the provider's length flag an unterminated kernel string gives it away.
  EXPECT_TRUE(parse_candidate_reply(cut, false).truncated);
}

TEST(ReplyParser, AClosedBlockSurvivesALengthStopInTrailingProse) {
  std::string reply = std::string("```python\n") + kProgram + "```\nExplanation: the kernel is";
  EXPECT_TRUE(parse_candidate_reply(reply, true).ok);
}

TEST(ReplyParser, RenamesTheTopLevelModuleToModelNew) {
  std::string reply =
      "```python\nimport torch\nimport torch.nn as nn\n\nclass Helper(nn.Module):\n    pass\n\n"
      "class Model(nn.Module):\n    def __init__(self):\n        super(Model, self).__init__()\n"
      "    def forward(self, x):\n        return x\n```\n";
  auto r = parse_candidate_reply(reply, false);
  ASSERT_TRUE(r.ok);
  EXPECT_NE(r.code.find("class ModelNew(nn.Module):"), std::string::npos);
  EXPECT_NE(r.code.find("super(ModelNew, self)"), std::string::npos);
  EXPECT_NE(r.code.find("class Helper(nn.Module)"), std::string::npos);
  EXPECT_EQ(r.repairs.back(), "renamed class Model to ModelNew");
}

TEST(ReplyParser, AddsForgottenImports) {
  auto r = parse_candidate_reply("```python\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                                 "        return torch.relu(x)\n```\n",
                                 false);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.code.rfind("import torch.nn as nn\nimport torch\n", 0), 0u) << r.code;
}

TEST(ReplyParser, ProseOnlyAndEmptyRepliesAreProblems) {
  auto r = parse_candidate_reply("I cannot help with that kernel, sorry.", false);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.problem.find("no Python program"), std::string::npos);
  EXPECT_FALSE(parse_candidate_reply("   \n", false).ok);
  auto no_class = parse_candidate_reply("```python\nimport torch\ndef f(x):\n    return x\n```", false);
  EXPECT_FALSE(no_class.ok);
  EXPECT_NE(no_class.problem.find("ModelNew"), std::string::npos);
}

TEST(ReplyParser, TildeFencesAndLongerFencesWork) {
  auto blocks = extract_code_blocks("~~~python\na = 1\n~~~\n````\nb = '```'\n```\n````\n");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].language, "python");
  EXPECT_EQ(blocks[1].code, "b = '```'\n```\n");
  EXPECT_TRUE(blocks[1].closed);
}

}  // namespace
}  // namespace kforge::agent
