// Server-sent event framing.
#include "llm/sse.h"

#include <gtest/gtest.h>

namespace kforge::llm {
namespace {

TEST(Sse, ParsesEventsDataAndComments) {
  auto events = parse_sse(": hello\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\ndata: {\"x\":1}\n\nevent: tail\ndata: cut");
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].event, "a");
  EXPECT_EQ(events[0].data, "one\ntwo");
  EXPECT_EQ(events[1].event, "");
  EXPECT_EQ(events[1].data, "{\"x\":1}");
  EXPECT_EQ(events[2].event, "tail");
  EXPECT_EQ(events[2].data, "cut");
  EXPECT_TRUE(parse_sse("").empty());
}

}  // namespace
}  // namespace kforge::llm
