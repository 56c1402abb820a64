// Masking rules of the replay key.
#include "llm/normalize.h"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

TEST(Normalize, MasksVolatileParts) {
  EXPECT_EQ(normalize_text("see /tmp/kforge-x1y2/cand.cu."), "see <TMP>.");
  EXPECT_EQ(normalize_text("file \"/var/tmp/a/b.py\", line 3"), "file \"<TMP>\", line 3");
  EXPECT_EQ(normalize_text("took 1.234 ms (3.5e-05 s)"), "took <NUM>ms (<NUM>s)");
  EXPECT_EQ(normalize_text("took 123 us, 42 ms, 17%"), "took <NUM>us, <NUM>ms, <NUM>%");
  EXPECT_EQ(normalize_text("speedup 2.5x"), "speedup <NUM>x");
  // Where a wrong output is wrong depends on the secret trial inputs.
  EXPECT_EQ(normalize_text("output: 2073445 of 2097152 elements outside tolerance; worst at index [35, 27517]"),
            "output: <NUM> of 2097152 elements outside tolerance; worst at index [<NUM>]");
  EXPECT_EQ(normalize_text("- worst index: [10, 12323]"), "- worst index: [<NUM>]");
  EXPECT_EQ(normalize_text("- elements outside tolerance: 2073609"), "- elements outside tolerance: <NUM>");
  EXPECT_EQ(normalize_text("- at that index: expected -0.0305443, got -5.08416\n- trial: 0"),
            "- at that index: expected <NUM>, got <NUM>\n- trial: 0");
  EXPECT_EQ(normalize_text("- at that index: expected 3, got nan"), "- at that index: expected <NUM>, got <NUM>");
  EXPECT_EQ(normalize_text("- max abs error: 4\n- max rel error: inf\n"),
            "- max abs error: <NUM>\n- max rel error: <NUM>\n");
  EXPECT_EQ(normalize_text("x = 1, got 2"), "x = 1, got 2");
  EXPECT_EQ(normalize_text("shape [35, 27517] of x"), "shape [35, 27517] of x");
  EXPECT_EQ(normalize_text("at 0x7ffd1234abcd"), "at <HEX>");
  EXPECT_EQ(normalize_text("run 123e4567-e89b-12d3-a456-426614174000 done"), "run <UUID> done");
  EXPECT_EQ(normalize_text("at 2024-05-01T12:34:56.789Z ok"), "at <TIME> ok");
  EXPECT_EQ(normalize_text("line one  \r\nline two\t\n"), "line one\nline two\n");
}

TEST(Normalize, KeepsWhatMatters) {
  EXPECT_EQ(normalize_text("shape 64 x 128, tile 64x64"), "shape 64 x 128, tile 64x64");
  EXPECT_EQ(normalize_text("conv2d with 3 steps on sm_90"), "conv2d with 3 steps on sm_90");
  EXPECT_EQ(normalize_text("/home/me/project/kernel.cu"), "/home/me/project/kernel.cu");
  EXPECT_EQ(normalize_text("float4 x = make_float4(0, 1, 2, 3);"), "float4 x = make_float4(0, 1, 2, 3);");
}

TEST(Normalize, KeyIgnoresMaskedPartsAndSampling) {
  Request a, b;
  a.messages.push_back(Message::text(Role::kUser, "took 1.5 ms in /tmp/run-1/x.cu"));
  b.messages.push_back(Message::text(Role::kUser, "took 2.25 ms in /tmp/run-2/x.cu"));
  b.max_tokens = 99;
  b.temperature = 0.7;
  EXPECT_EQ(request_key(a), request_key(b));
  EXPECT_EQ(request_key(a).size(), 16u);

  Request c = a;
  c.messages[0].role = Role::kSystem;
  EXPECT_NE(request_key(a), request_key(c));
  Request d = a;
  d.messages[0].content.push_back(ContentPart::image_part("image/png", "AAAA"));
  EXPECT_NE(request_key(a), request_key(d));
}

TEST(Normalize, DescribeDifference) {
  EXPECT_EQ(describe_difference("same", "same"), "");
  std::string d = describe_difference("### user\nhello\nworld", "### user\nhello\nthere");
  EXPECT_NE(d.find("line 3"), std::string::npos) << d;
  EXPECT_NE(d.find("user message"), std::string::npos) << d;
  EXPECT_NE(d.find("recorded: world"), std::string::npos) << d;
  EXPECT_NE(d.find("actual:   there"), std::string::npos) << d;
  EXPECT_NE(describe_difference("a\nb", "a").find("<end of request>"), std::string::npos);
}

}  // namespace
}  // namespace kforge::llm
