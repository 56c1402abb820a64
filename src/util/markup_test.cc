#include "util/markup.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

TEST(Markup, EscapesEveryCharacterThatEndsTextOrAnAttribute) {
  EXPECT_EQ(escape_markup(R"(<a href="x">Tom & Jerry's</a>)"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
  EXPECT_EQ(escape_markup("plain text 1.5x"), "plain text 1.5x");
}

}  // namespace
}  // namespace kforge
